//! Fan-out settings from the environment and a config file, after the fan-out paper's
//! libpcap: `TRACEKIT_GROUP`, `TRACEKIT_GROUP_<dev>`, `TRACEKIT_FANOUT` (and, at lower
//! priority, the paper's `PCAP_GROUP`, `PCAP_GROUP_<dev>`, `PCAP_FANOUT`), and a
//! `key[@group] = value` file named by `TRACEKIT_CONFIG`.
//!
//! Precedence: what the program asks for explicitly, then the environment, then the
//! config file, then the defaults.

use std::collections::BTreeMap;
use std::path::Path;

use tracekit_core::Error;

use crate::fanout::FanoutSpec;

/// Where a kernel filter is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KernelFilter {
    /// In the kernel when the expression gives the same verdict there (it does not look
    /// at VLAN tags, MPLS, PPPoE, raw link bytes or lengths, and has no negation) and its
    /// program fits the kernel's 4,096 instructions; otherwise in user space only.
    #[default]
    Auto,
    /// Always attach it to the kernel too (user space still checks re-tagged frames); a
    /// program longer than the kernel takes is refused with a message.
    On,
    /// User space only.
    Off,
}

impl std::str::FromStr for KernelFilter {
    type Err = Error;
    fn from_str(s: &str) -> Result<KernelFilter, Error> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(KernelFilter::Auto),
            "on" | "yes" | "true" | "1" => Ok(KernelFilter::On),
            "off" | "no" | "false" | "0" => Ok(KernelFilter::Off),
            _ => Err(Error::invalid_argument(format!(
                "kernel_filter must be auto, on or off, not '{s}'"
            ))),
        }
    }
}

/// Capture settings a config file can give, globally or for one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Fan-out mode string.
    pub fanout: Option<FanoutSpec>,
    /// Members (sockets) in the group.
    pub members: Option<usize>,
    /// Snap length.
    pub snaplen: Option<u32>,
    /// tcpdump filter expression.
    pub filter: Option<String>,
    /// Ring block size in bytes.
    pub block_size: Option<usize>,
    /// Ring blocks per member.
    pub block_nr: Option<usize>,
    /// Block retire timeout in milliseconds.
    pub latency_ms: Option<u32>,
    /// Promiscuous mode.
    pub promisc: Option<bool>,
    /// Kernel filtering.
    pub kernel_filter: Option<KernelFilter>,
}

impl Settings {
    /// `self`, with what it leaves unset taken from `fallback`.
    pub fn or(&self, fallback: &Settings) -> Settings {
        Settings {
            fanout: self.fanout.or(fallback.fanout),
            members: self.members.or(fallback.members),
            snaplen: self.snaplen.or(fallback.snaplen),
            filter: self.filter.clone().or_else(|| fallback.filter.clone()),
            block_size: self.block_size.or(fallback.block_size),
            block_nr: self.block_nr.or(fallback.block_nr),
            latency_ms: self.latency_ms.or(fallback.latency_ms),
            promisc: self.promisc.or(fallback.promisc),
            kernel_filter: self.kernel_filter.or(fallback.kernel_filter),
        }
    }
}

/// A parsed config file.
///
/// ```
/// use tracekit_afpacket::Config;
/// let text = "# capture settings\ndef_group = 7\ngroup_eth1 = 8\nfanout = hash|defrag\nfanout@8 = lb\nmembers@7 = 4\n";
/// let c = Config::parse(text, "tracekit.conf")?;
/// assert_eq!(c.def_group, Some(7));
/// assert_eq!(c.device_groups["eth1"], 8);
/// assert_eq!(c.settings_for(Some(8)).fanout.unwrap().to_string(), "lb");
/// assert_eq!(c.settings_for(Some(7)).members, Some(4));
/// let e = Config::parse("def_group = 7\nmembres = 2\n", "x.conf").unwrap_err();
/// assert!(e.to_string().contains("x.conf:2: unknown key 'membres'"));
/// # Ok::<(), tracekit_core::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// `def_group`: the group of devices without a `group_<dev>` line.
    pub def_group: Option<u16>,
    /// `group_<dev>` lines.
    pub device_groups: BTreeMap<String, u16>,
    /// Settings without `@group`.
    pub global: Settings,
    /// Settings given with `@group`.
    pub groups: BTreeMap<u16, Settings>,
    /// Accepted oddities (a global-only key given with `@group`), with their lines.
    pub warnings: Vec<String>,
}

impl Config {
    /// Parses config text; errors name `origin`, the line and the reason.
    pub fn parse(text: &str, origin: &str) -> Result<Config, Error> {
        let mut c = Config::default();
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let err = |why: String| Error::invalid_argument(format!("{origin}:{line}: {why}"));
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let Some((key, value)) = content.split_once('=') else {
                return Err(err(format!(
                    "expected 'key = value' or 'key@group = value', found '{content}'"
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            let (key, group) = match key.split_once('@') {
                Some((k, g)) => {
                    let g = g.trim().parse::<u16>().map_err(|_| {
                        err(format!(
                            "group '{}' is not a number from 0 to 65535",
                            g.trim()
                        ))
                    })?;
                    (k.trim(), Some(g))
                }
                None => (key, None),
            };
            if value.is_empty() {
                return Err(err(format!("no value for '{key}'")));
            }
            let number = |what: &str| -> Result<u64, Error> {
                value
                    .parse::<u64>()
                    .map_err(|_| err(format!("{what} must be a number, not '{value}'")))
            };
            if key == "def_group" || key.starts_with("group_") {
                if group.is_some() {
                    c.warnings.push(format!(
                        "{origin}:{line}: '{key}' applies to every group: '@' ignored"
                    ));
                }
                let id = u16::try_from(number("a group")?)
                    .map_err(|_| err(format!("group {value} is above 65535")))?;
                match key.strip_prefix("group_") {
                    Some("") => return Err(err("'group_' needs a device name".into())),
                    Some(dev) => {
                        c.device_groups.insert(dev.to_string(), id);
                    }
                    None => c.def_group = Some(id),
                }
                continue;
            }
            let s = match group {
                Some(g) => c.groups.entry(g).or_default(),
                None => &mut c.global,
            };
            match key {
                "fanout" => s.fanout = Some(value.parse().map_err(|e: Error| err(e.to_string()))?),
                "members" => {
                    let m = number("members")?;
                    if !(1..=65_536).contains(&m) {
                        return Err(err(format!("members must be 1 to 65536, not {m}")));
                    }
                    s.members = Some(m as usize);
                }
                "snaplen" => {
                    let v = number("snaplen")?;
                    if !(1..=u64::from(tracekit_core::MAX_SNAPLEN)).contains(&v) {
                        return Err(err(format!(
                            "snaplen must be 1 to {}, not {v}",
                            tracekit_core::MAX_SNAPLEN
                        )));
                    }
                    s.snaplen = Some(v as u32);
                }
                "filter" => s.filter = Some(value.trim_matches('"').to_string()),
                "block_size" => s.block_size = Some(number("block_size")? as usize),
                "block_nr" => s.block_nr = Some(number("block_nr")? as usize),
                "latency_ms" => {
                    s.latency_ms = Some(
                        u32::try_from(number("latency_ms")?)
                            .map_err(|_| err("latency_ms is too large".into()))?,
                    )
                }
                "promisc" => {
                    s.promisc = Some(match value.to_ascii_lowercase().as_str() {
                        "1" | "yes" | "true" | "on" => true,
                        "0" | "no" | "false" | "off" => false,
                        _ => return Err(err(format!("promisc must be yes or no, not '{value}'"))),
                    })
                }
                "kernel_filter" => {
                    s.kernel_filter = Some(value.parse().map_err(|e: Error| err(e.to_string()))?)
                }
                _ => return Err(err(format!("unknown key '{key}'"))),
            }
        }
        Ok(c)
    }

    /// Reads and parses a config file.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::from(e).with_path(path))?;
        Config::parse(&text, &path.display().to_string())
    }

    /// The file named by `TRACEKIT_CONFIG`, if set.
    pub fn from_env() -> Result<Option<Config>, Error> {
        match std::env::var_os("TRACEKIT_CONFIG") {
            Some(p) if !p.is_empty() => Config::load(Path::new(&p)).map(Some),
            _ => Ok(None),
        }
    }

    /// The settings for `group`: the group's lines over the global ones.
    pub fn settings_for(&self, group: Option<u16>) -> Settings {
        match group.and_then(|g| self.groups.get(&g)) {
            Some(s) => s.or(&self.global),
            None => self.global.clone(),
        }
    }
}

/// The environment-variable form of a device name: every character that is not a
/// letter or digit becomes `_` (`eth0.100` → `eth0_100`).
pub fn env_device_name(dev: &str) -> String {
    dev.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// What the environment and the config file say for capturing on `dev`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The fan-out group, if any source names one.
    pub group: Option<u16>,
    /// Settings (fan-out mode from the environment over the file's).
    pub settings: Settings,
}

/// Resolves the group and settings for `dev` from `env` (a variable lookup, normally
/// `std::env::var`) and an optional config file.
///
/// Group: `TRACEKIT_GROUP_<dev>`, `TRACEKIT_GROUP`, `PCAP_GROUP_<dev>`, `PCAP_GROUP`,
/// `PCAP_DEF_GROUP`, then the file's `group_<dev>` and `def_group`. Mode:
/// `TRACEKIT_FANOUT_<group>`, `TRACEKIT_FANOUT`, `PCAP_FANOUT`, then the file's
/// `fanout@group` and `fanout`. A malformed variable is an error naming it.
///
/// ```
/// use tracekit_afpacket::config::resolve;
/// let env = |k: &str| match k {
///     "TRACEKIT_GROUP_eth0_100" => Some("9".to_string()),
///     "PCAP_FANOUT" => Some("lb".to_string()),
///     _ => None,
/// };
/// let r = resolve("eth0.100", env, None)?;
/// assert_eq!(r.group, Some(9));
/// assert_eq!(r.settings.fanout.unwrap().to_string(), "lb");
/// # Ok::<(), tracekit_core::Error>(())
/// ```
pub fn resolve(
    dev: &str,
    env: impl Fn(&str) -> Option<String>,
    config: Option<&Config>,
) -> Result<Resolved, Error> {
    let d = env_device_name(dev);
    let group_vars = [
        format!("TRACEKIT_GROUP_{d}"),
        "TRACEKIT_GROUP".to_string(),
        format!("PCAP_GROUP_{d}"),
        "PCAP_GROUP".to_string(),
        "PCAP_DEF_GROUP".to_string(),
    ];
    let mut group = None;
    for var in &group_vars {
        if let Some(v) = env(var).filter(|v| !v.trim().is_empty()) {
            group = Some(v.trim().parse::<u16>().map_err(|_| {
                Error::invalid_argument(format!(
                    "{var}={v}: a fan-out group is a number from 0 to 65535"
                ))
            })?);
            break;
        }
    }
    if group.is_none()
        && let Some(c) = config
    {
        group = c.device_groups.get(dev).copied().or(c.def_group);
    }
    let mut settings = config.map(|c| c.settings_for(group)).unwrap_or_default();
    let mut mode_vars = vec!["TRACEKIT_FANOUT".to_string(), "PCAP_FANOUT".to_string()];
    if let Some(g) = group {
        mode_vars.insert(0, format!("TRACEKIT_FANOUT_{g}"));
    }
    for var in &mode_vars {
        if let Some(v) = env(var).filter(|v| !v.trim().is_empty()) {
            let spec = v
                .parse::<FanoutSpec>()
                .map_err(|e| Error::invalid_argument(format!("{var}: {e}")))?;
            settings.fanout = Some(spec);
            break;
        }
    }
    Ok(Resolved { group, settings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    const FILE: &str = "\
# tracekit.conf
def_group      = 7
group_eth1     = 8
fanout         = hash|ignore_outgoing   # the default group's mode
fanout@8       = lb
members@7      = 4
snaplen@8      = 128
filter@7       = tcp or udp
latency_ms     = 10
promisc@8      = no
kernel_filter  = off
block_size@7   = 2097152
block_nr       = 32
";

    #[test]
    fn a_full_file() {
        let c = Config::parse(FILE, "t.conf").unwrap();
        assert_eq!(c.def_group, Some(7));
        assert_eq!(c.device_groups.get("eth1"), Some(&8));
        let s7 = c.settings_for(Some(7));
        assert_eq!(s7.fanout.unwrap().to_string(), "hash|ignore_outgoing");
        assert_eq!(s7.members, Some(4));
        assert_eq!(s7.filter.as_deref(), Some("tcp or udp"));
        assert_eq!(s7.latency_ms, Some(10));
        assert_eq!(s7.block_size, Some(2 << 20));
        assert_eq!(s7.block_nr, Some(32));
        assert_eq!(s7.kernel_filter, Some(KernelFilter::Off));
        let s8 = c.settings_for(Some(8));
        assert_eq!(s8.fanout.unwrap().to_string(), "lb");
        assert_eq!(
            (s8.snaplen, s8.promisc, s8.members),
            (Some(128), Some(false), None)
        );
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn errors_name_the_line() {
        for (text, want) in [
            ("members = 2\nbogus = 1\n", "c:2: unknown key 'bogus'"),
            ("fanout = hash|frag\n", "c:1: unknown fan-out flag 'frag'"),
            (
                "\n\nmembers = two\n",
                "c:3: members must be a number, not 'two'",
            ),
            ("members = 0\n", "c:1: members must be 1 to 65536, not 0"),
            ("fanout@x = lb\n", "c:1: group 'x' is not a number"),
            ("def_group = 70000\n", "c:1: group 70000 is above 65535"),
            ("snaplen\n", "c:1: expected 'key = value'"),
            ("filter =\n", "c:1: no value for 'filter'"),
            ("promisc = maybe\n", "c:1: promisc must be yes or no"),
            (
                "kernel_filter = sometimes\n",
                "c:1: kernel_filter must be auto, on or off",
            ),
            (
                "fanout = rollover|rollover\n",
                "c:1: fan-out mode rollover cannot take the rollover flag",
            ),
            (
                "fanout = hash|defrag|defrag\n",
                "c:1: fan-out flag 'defrag' given twice",
            ),
            ("group_ = 3\n", "c:1: 'group_' needs a device name"),
        ] {
            let e = Config::parse(text, "c").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let c = Config::parse("def_group@3 = 4\n", "c").unwrap();
        assert_eq!(c.def_group, Some(4));
        assert_eq!(
            c.warnings,
            vec!["c:1: 'def_group' applies to every group: '@' ignored"]
        );
    }

    #[test]
    fn environment_over_file_and_tracekit_over_pcap() {
        let c = Config::parse(FILE, "t.conf").unwrap();
        // File only: eth1 is in group 8 (lb); others in the default group 7.
        let r = resolve("eth1", env_of(&[]), Some(&c)).unwrap();
        assert_eq!(
            (r.group, r.settings.fanout.unwrap().to_string()),
            (Some(8), "lb".into())
        );
        let r = resolve("eth0", env_of(&[]), Some(&c)).unwrap();
        assert_eq!(r.group, Some(7));
        assert_eq!(r.settings.members, Some(4));
        // The environment wins over the file; TRACEKIT_* over PCAP_*; a device's
        // variable over the general one.
        let env = env_of(&[
            ("PCAP_GROUP", "3"),
            ("TRACEKIT_GROUP", "5"),
            ("TRACEKIT_GROUP_eth1", "6"),
            ("PCAP_FANOUT", "rnd"),
        ]);
        let r = resolve("eth1", &env, Some(&c)).unwrap();
        assert_eq!(
            (r.group, r.settings.fanout.unwrap().to_string()),
            (Some(6), "rnd".into())
        );
        let r = resolve("eth0", &env, Some(&c)).unwrap();
        assert_eq!(r.group, Some(5));
        let env = env_of(&[("PCAP_GROUP_eth0", "11"), ("PCAP_GROUP", "3")]);
        assert_eq!(resolve("eth0", &env, None).unwrap().group, Some(11));
        let env = env_of(&[("PCAP_DEF_GROUP", "12")]);
        assert_eq!(resolve("eth0", &env, None).unwrap().group, Some(12));
        // A group's own mode variable beats the general one.
        let env = env_of(&[
            ("TRACEKIT_GROUP", "5"),
            ("TRACEKIT_FANOUT", "lb"),
            ("TRACEKIT_FANOUT_5", "cpu|defrag"),
        ]);
        let r = resolve("eth0", &env, None).unwrap();
        assert_eq!(r.settings.fanout.unwrap().to_string(), "cpu|defrag");
        // Nothing anywhere: no group, no mode.
        assert_eq!(
            resolve("eth0", env_of(&[]), None).unwrap(),
            Resolved::default()
        );
    }

    #[test]
    fn bad_variables_are_named() {
        let e = resolve("eth0", env_of(&[("TRACEKIT_GROUP", "seven")]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("TRACEKIT_GROUP=seven"), "{e}");
        let e = resolve("eth0", env_of(&[("PCAP_FANOUT", "hash|nope")]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("PCAP_FANOUT: ") && e.contains("'nope'"), "{e}");
        assert_eq!(env_device_name("eth0.100"), "eth0_100");
    }
}
