//! The `tracekit` command. Thin glue over the `tracekit` library: parsing arguments,
//! printing, exit codes. Anything a library user would also want lives in the library.

#![forbid(unsafe_code)]

mod anon;
mod capture;
mod columns;
mod convert;
mod diff;
mod dump;
mod ends;
#[cfg(feature = "export")]
mod export;
mod fields;
mod flows;
mod follow;
mod info;
mod merge;
mod numbered;
mod output;
mod ports;
mod progress;
mod replay;
mod report;
mod report_html;
mod rtstats;
mod scans;
mod split;
mod stats;
mod timefmt;
mod top;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Read, write and convert packet traces.
#[derive(Parser)]
#[command(name = "tracekit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Info(info::InfoArgs),
    Convert(convert::ConvertArgs),
    Fields(fields::FieldsArgs),
    Dump(dump::DumpArgs),
    Capture(capture::CaptureArgs),

    Stats(stats::StatsArgs),
    Split(split::SplitArgs),
    Merge(merge::MergeArgs),
    Ports(ports::PortsArgs),
    Flows(flows::FlowsArgs),
    Follow(follow::FollowArgs),
    Scans(scans::ScansArgs),
    Rtstats(rtstats::RtstatsArgs),
    Anon(anon::AnonArgs),
    Diff(diff::DiffArgs),
    Ends(ends::EndsArgs),
    Report(report::ReportArgs),
    Top(top::TopArgs),
    Replay(replay::ReplayArgs),
    #[cfg(feature = "export")]
    Export(export::ExportArgs),
}

/// How a command ended, for the exit status: 0 success, 1 a trace or output problem
/// (reported on stderr), 2 bad usage (from clap), 130 stopped by Ctrl-C or SIGTERM
/// (outputs completed with every packet so far).
pub enum Outcome {
    Ok,
    Failed,
    Interrupted,
    /// A command's own status (`diff`: 1 when the traces differ, 2 on trouble).
    Exit(u8),
}

fn main() -> ExitCode {
    let command = Cli::command().mut_subcommand("fields", |c| c.after_help(fields::field_list()));
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Info(args) => info::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Fields(args) => fields::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Capture(args) => capture::run(args),

        Command::Stats(args) => stats::run(args),
        Command::Split(args) => split::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Ports(args) => ports::run(args),
        Command::Flows(args) => flows::run(args),
        Command::Follow(args) => follow::run(args),
        Command::Scans(args) => scans::run(args),
        Command::Rtstats(args) => rtstats::run(args),
        Command::Anon(args) => anon::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Ends(args) => ends::run(args),
        Command::Report(args) => report::run(args),
        Command::Top(args) => top::run(args),
        Command::Replay(args) => replay::run(args),
        #[cfg(feature = "export")]
        Command::Export(args) => export::run(args),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Ok(Outcome::Exit(code)) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                // `tracekit ... | head`: the reader went away; that is not an error.
                return ExitCode::SUCCESS;
            }
            eprintln!("tracekit: {}", message(&e));
            ExitCode::from(1)
        }
    }
}

/// Opens a trace like `tracekit::open`; a live source (`afpacket:IFACE`, `dag:DEV`) also
/// stops cleanly on Ctrl-C (its reader returns the end, so outputs are completed).
pub fn open_source(uri: &str) -> Result<tracekit::Source, tracekit::Error> {
    open_source_with(uri, &tracekit::OpenOptions::default())
}

/// [`open_source`] with options.
pub fn open_source_with(
    uri: &str,
    options: &tracekit::OpenOptions,
) -> Result<tracekit::Source, tracekit::Error> {
    let mut source = tracekit::open_with(uri, options)?;
    if let Some(live) = source.as_live_mut() {
        live.set_stop_handle(ctrl_c_stop());
    } else if source.format_name() == "dag" {
        source.set_stop_flag(ctrl_c_stop().flag());
    }
    Ok(source)
}

/// Parses `--threads` for analyses: 0 (one per core) to the most workers a run takes.
pub fn parse_workers(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    let max = tracekit::parallel::MAX_WORKERS;
    if n > max {
        return Err(format!("at most {max} threads (0: one per core)"));
    }
    Ok(n)
}

/// Whether `uri` names a live source (output should then be flushed per packet).
pub fn is_live(uri: &str) -> bool {
    tracekit::is_live_uri(uri)
}

/// One stop flag for the process, set by Ctrl-C, SIGTERM or SIGHUP (the handler is
/// installed once). Commands that write check it between packets: they stop reading,
/// complete their outputs and exit with 130 (a read waiting on a quiet pipe ends
/// first: the next packet or the end of the pipe lets the command see the flag).
pub fn ctrl_c_stop() -> tracekit::live::StopHandle {
    static STOP: std::sync::OnceLock<tracekit::live::StopHandle> = std::sync::OnceLock::new();
    STOP.get_or_init(|| {
        let stop = tracekit::live::StopHandle::default();
        let s = stop.clone();
        if let Err(e) = ctrlc::set_handler(move || s.stop()) {
            eprintln!("tracekit: cannot catch Ctrl-C: {e}");
        }
        stop
    })
    .clone()
}

/// An error and its causes, joined (each cause's message says only its own part:
/// tracekit's errors show their I/O cause in the message, not again as a source).
fn message(e: &anyhow::Error) -> String {
    e.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// Whether an error is a closed stdout.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<tracekit::Error>()
                .is_some_and(tracekit::Error::is_broken_pipe)
    })
}
