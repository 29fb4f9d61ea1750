//! A progress bar on stderr for long work, shown only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Packets between two updates of the bar: often enough to move smoothly, rare enough to
/// cost nothing per packet.
const UPDATE_EVERY: u64 = 1 << 14;

/// Tracks bytes consumed from an input of known or unknown size.
pub struct Progress {
    bar: Option<ProgressBar>,
    countdown: u64,
}

impl Progress {
    /// A bar for `label` over `total` bytes (a spinner when the size is unknown); nothing
    /// at all when stderr is not a terminal.
    pub fn new(label: &str, total: Option<u64>) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match total {
                Some(total) => ProgressBar::new(total).with_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{msg} {spinner} {bytes} {bytes_per_sec}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                ),
            };
            bar.set_message(label.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            countdown: UPDATE_EVERY,
        }
    }

    /// Whether a bar is shown (stderr is a terminal).
    pub fn is_shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Called once per packet with the input position.
    #[inline]
    pub fn tick(&mut self, position: impl FnOnce() -> u64) {
        if let Some(bar) = &self.bar {
            self.countdown -= 1;
            if self.countdown == 0 {
                self.countdown = UPDATE_EVERY;
                bar.set_position(position());
            }
        }
    }

    /// Removes the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
