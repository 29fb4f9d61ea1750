//! `tracekit top`: the busiest flows or endpoints per interval (tracetop, tracetopends).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Row, Table};
use ratatui::{DefaultTerminal, Frame};
use serde::Serialize;
use tracekit::Timestamp;
use tracekit::analysis::{Snapshot, Top, TopBy, TopKey};

use crate::Outcome;
use crate::timefmt;

/// The busiest flows or endpoints of a trace or a live source, per interval (tracetop,
/// tracetopends).
///
/// Intervals are of packet time (aligned to multiples of the interval), so a file shows
/// what a live capture would have. On a terminal the table redraws in place after every
/// interval; `q` or Ctrl-C quits, and at the end of a file the last table stays until
/// then. `--json` prints one object per interval; `--once` prints the first interval
/// (the whole file with a long `-i`) and exits. A live source that goes quiet redraws
/// with its next packet.
///
/// Example: `tracekit top --by endpoints -i 10 --once --json trace.pcap`
#[derive(Args)]
pub struct TopArgs {
    /// Trace file or live source (`afpacket:IFACE`).
    source: String,
    /// Rank flows (5-tuples, both directions together) or endpoints (IP addresses).
    /// Non-first fragments and cut TCP/UDP headers have no ports: they count in the
    /// totals, under no flow.
    #[arg(long, value_enum, default_value_t = By::Flows)]
    by: By,
    /// Interval in seconds.
    #[arg(short = 'i', long, default_value_t = 2.0, value_parser = parse_interval)]
    interval: f64,
    /// Show the N busiest.
    #[arg(short = 'n', long, default_value_t = 20)]
    count: usize,
    /// Count only the packets matching this tcpdump filter expression.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Print the first interval and exit.
    #[arg(long)]
    once: bool,
    /// Print one JSON object per interval.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum By {
    /// Flows.
    Flows,
    /// IP addresses.
    Endpoints,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(0.001..=1e9).contains(&v) {
        return Err("between 0.001 and 10^9 seconds".to_string());
    }
    Ok(v)
}

#[derive(Serialize)]
struct RowJson {
    key: String,
    packets: u64,
    bytes: u64,
}

#[derive(Serialize)]
struct SnapshotJson {
    start_ns: u64,
    interval_ns: u64,
    packets: u64,
    bytes: u64,
    distinct: usize,
    top: Vec<RowJson>,
}

fn key_text(k: &TopKey) -> String {
    match k {
        TopKey::Endpoint(a) => a.to_string(),
        TopKey::Flow(f) => {
            let proto = crate::report::protocol_name(f.protocol)
                .map_or_else(|| f.protocol.to_string(), str::to_string);
            let end = |a: std::net::IpAddr, p: u16| match a {
                std::net::IpAddr::V6(_) => format!("[{a}]:{p}"),
                std::net::IpAddr::V4(_) => format!("{a}:{p}"),
            };
            format!(
                "{proto} {} <-> {}",
                end(f.src, f.src_port),
                end(f.dst, f.dst_port)
            )
        }
    }
}

/// Where snapshots go.
enum Screen {
    Json,
    Text,
    Tui(DefaultTerminal),
}

impl Screen {
    /// Shows a snapshot; `false` when the user asked to quit.
    fn show(&mut self, s: &Snapshot, what: &str) -> Result<bool> {
        match self {
            Screen::Json => {
                let record = SnapshotJson {
                    start_ns: s.start_ns,
                    interval_ns: s.interval_ns,
                    packets: s.packets,
                    bytes: s.bytes,
                    distinct: s.distinct,
                    top: s
                        .rows
                        .iter()
                        .map(|(k, c)| RowJson {
                            key: key_text(k),
                            packets: c.packets,
                            bytes: c.bytes,
                        })
                        .collect(),
                };
                let mut out = std::io::stdout().lock();
                serde_json::to_writer(&mut out, &record)?;
                writeln!(out)?;
                out.flush()?;
                Ok(true)
            }
            Screen::Text => {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{}", heading(s, what))?;
                writeln!(out, "{:>12} {:>14}  {what}", "packets", "bytes")?;
                for (k, c) in &s.rows {
                    writeln!(out, "{:>12} {:>14}  {}", c.packets, c.bytes, key_text(k))?;
                }
                writeln!(out)?;
                out.flush()?;
                Ok(true)
            }
            Screen::Tui(term) => {
                term.draw(|f| draw(f, s, what))?;
                Ok(!quit_requested(Duration::ZERO)?)
            }
        }
    }
}

fn heading(s: &Snapshot, what: &str) -> String {
    let t = timefmt::utc(Timestamp::from_unix_nanos(s.start_ns));
    format!(
        "{t} +{}: {} packets, {} bytes, {} {what}",
        timefmt::seconds(s.interval_ns),
        s.packets,
        s.bytes,
        s.distinct
    )
}

fn draw(f: &mut Frame<'_>, s: &Snapshot, what: &str) {
    let rows = s.rows.iter().map(|(k, c)| {
        let share = if s.bytes == 0 {
            0.0
        } else {
            c.bytes as f64 * 100.0 / s.bytes as f64
        };
        Row::new(vec![
            key_text(k),
            c.packets.to_string(),
            c.bytes.to_string(),
            format!("{share:.1}%"),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(40),
            Constraint::Length(12),
            Constraint::Length(14),
            Constraint::Length(7),
        ],
    )
    .header(
        Row::new(vec![what, "packets", "bytes", "share"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::bordered()
            .title(Line::from(format!(" tracekit top: {} ", heading(s, what))))
            .title_bottom(Line::from(" q: quit ")),
    );
    f.render_widget(table, f.area());
}

/// Whether `q`, Esc or Ctrl-C was pressed (waiting at most `wait`).
fn quit_requested(wait: Duration) -> Result<bool> {
    while event::poll(wait)? {
        if let Event::Key(k) = event::read()?
            && k.kind == KeyEventKind::Press
            && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

pub fn run(args: TopArgs) -> Result<Outcome> {
    let by = match args.by {
        By::Flows => TopBy::Flows,
        By::Endpoints => TopBy::Endpoints,
    };
    let what = match by {
        TopBy::Flows => "flows",
        TopBy::Endpoints => "endpoints",
    };
    let mut source = crate::open_source(&args.source)?;
    if let Some(expr) = &args.filter {
        source = source
            .with_filter(expr)
            .with_context(|| format!("filter '{expr}'"))?;
    }
    let mut top = Top::new(by, (args.interval * 1e9) as u64, args.count);
    let tui = !args.json && !args.once && std::io::stdout().is_terminal();
    let mut screen = if args.json {
        Screen::Json
    } else if tui {
        Screen::Tui(ratatui::init())
    } else {
        Screen::Text
    };
    let stop = crate::ctrl_c_stop();
    let result = (|| -> Result<(bool, Option<tracekit::Error>)> {
        let mut n = 0u64;
        loop {
            if stop.is_stopped() {
                return Ok((true, None));
            }
            let packet = match source.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => return Ok((false, None)),
                Err(e) => return Ok((false, Some(e))),
            };
            n += 1;
            if let Some(s) = top.add(&packet)
                && (!screen.show(&s, what)? || args.once)
            {
                return Ok((true, None));
            }
            // In the terminal UI, keys are read between intervals too.
            if matches!(screen, Screen::Tui(_))
                && n.is_multiple_of(4096)
                && quit_requested(Duration::ZERO)?
            {
                return Ok((true, None));
            }
        }
    })();
    let (quit, error) = match result {
        Ok(r) => r,
        Err(e) => {
            if matches!(screen, Screen::Tui(_)) {
                ratatui::restore();
            }
            return Err(e);
        }
    };
    if !quit && let Some(s) = top.finish() {
        let keep_going = screen.show(&s, what)?;
        // At the end of a file the last table stays until the user quits.
        if keep_going && matches!(screen, Screen::Tui(_)) {
            while !quit_requested(Duration::from_millis(250))? {}
        }
    }
    if matches!(screen, Screen::Tui(_)) {
        ratatui::restore();
    }
    if let Some(e) = error {
        eprintln!("tracekit top: {e}");
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}
