//! `tracekit report --html`: one self-contained page (no script, no external file) with
//! the report's tables and SVG plots drawn by plotters: traffic over time, protocol mix,
//! packet sizes, top server ports and top talkers.

use std::fmt::Write as _;

use plotters::prelude::*;
use tracekit::Timestamp;
use tracekit::analysis::{Count, Endpoints, Report, SIZE_BUCKETS};

use crate::report::{ethertype_name, protocol_name};
use crate::timefmt;

const WIDTH: u32 = 760;
const HEIGHT: u32 = 320;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Traffic per time slot: packets (left axis) and megabits per second (drawn on its
/// own chart below for clarity).
fn traffic_svg(report: &Report) -> Result<String, Box<dyn std::error::Error>> {
    let series = report.series();
    let step = report.series_step().max(1);
    let start = series.first().map_or(0, |s| s.0);
    // Quiet slots are zeros, not lines drawn across the gap.
    let mut points: Vec<(f64, f64, f64)> = Vec::with_capacity(series.len() * 2);
    let mut prev: Option<u64> = None;
    for (t, c) in &series {
        if let Some(p) = prev
            && *t > p + step
        {
            points.push(((p + step - start) as f64, 0.0, 0.0));
            if *t > p + 2 * step {
                points.push(((t - step - start) as f64, 0.0, 0.0));
            }
        }
        points.push((
            (t - start) as f64,
            c.packets as f64 / step as f64,
            c.bytes as f64 * 8.0 / 1e6 / step as f64,
        ));
        prev = Some(*t);
    }
    let x_max = points.last().map_or(1.0, |p| p.0 + step as f64).max(1.0);
    let pps_max = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let mbps_max = points.iter().map(|p| p.2).fold(0.001, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Traffic over time ({step} s slots)"),
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .right_y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..pps_max)?
            .set_secondary_coord(0.0..x_max, 0.0..mbps_max);
        chart
            .configure_mesh()
            .x_desc("seconds since the first packet")
            .y_desc("packets/s")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        chart.configure_secondary_axes().y_desc("Mbit/s").draw()?;
        chart
            .draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.1)), &BLUE))?
            .label("packets/s")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE));
        chart
            .draw_secondary_series(LineSeries::new(points.iter().map(|p| (p.0, p.2)), &RED))?
            .label("Mbit/s")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// A horizontal bar chart of labelled values.
fn bars_svg(
    title: &str,
    unit: &str,
    bars: &[(String, f64)],
    color: RGBColor,
) -> Result<String, Box<dyn std::error::Error>> {
    let n = bars.len().max(1);
    let max = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.1;
    let height = (80 + 28 * n as u32).max(200);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(230)
            .build_cartesian_2d(0.0..max, (0..n).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                    labels.get(*i).cloned().unwrap_or_default()
                }
                SegmentValue::Last => String::new(),
            })
            .x_label_formatter(&|v| format!("{v:.0}"))
            .x_desc(unit)
            .draw()?;
        chart.draw_series(
            Histogram::horizontal(&chart)
                .style(color.mix(0.7).filled())
                .margin(4)
                .data(bars.iter().enumerate().map(|(i, (_, v))| (i, *v))),
        )?;
        root.present()?;
    }
    Ok(svg)
}

fn top<K>(mut rows: Vec<(K, Count)>, n: usize) -> Vec<(K, Count)> {
    rows.sort_by_key(|r| std::cmp::Reverse(r.1.bytes));
    rows.truncate(n);
    rows
}

fn table(html: &mut String, title: &str, head: &[&str], rows: &[Vec<String>]) {
    let _ = write!(html, "<h2>{}</h2>\n<table>\n<tr>", esc(title));
    for h in head {
        let _ = write!(html, "<th>{}</th>", esc(h));
    }
    html.push_str("</tr>\n");
    for r in rows {
        html.push_str("<tr>");
        for c in r {
            let _ = write!(html, "<td>{}</td>", esc(c));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
}

fn count_rows<K>(
    rows: impl IntoIterator<Item = (K, Count)>,
    label: impl Fn(K) -> String,
) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|(k, c)| vec![label(k), c.packets.to_string(), c.bytes.to_string()])
        .collect()
}

/// The page for `report` over `files`, with the busiest IPv4 and IPv6 endpoints.
pub fn page(
    files: &[String],
    report: &Report,
    talkers: &[&Endpoints],
) -> Result<String, Box<dyn std::error::Error>> {
    let r = report;
    let mut html = String::new();
    let title = format!("tracekit report: {}", files.join(", "));
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n\
         body {{ font-family: sans-serif; margin: 2em auto; max-width: 820px; color: #222; }}\n\
         table {{ border-collapse: collapse; margin-bottom: 1em; }}\n\
         th, td {{ border: 1px solid #ccc; padding: 2px 8px; text-align: right; }}\n\
         th {{ background: #eee; }} td:first-child {{ text-align: left; }}\n\
         figure {{ margin: 1em 0; }}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let mut summary = vec![
        vec!["packets".to_string(), r.packets.to_string()],
        vec!["wire bytes".to_string(), r.wire_bytes.to_string()],
        vec!["captured bytes".to_string(), r.captured_bytes.to_string()],
    ];
    if let Some((a, b)) = r.span {
        let t = |ns| timefmt::utc(Timestamp::from_unix_nanos(ns));
        summary.push(vec!["start".to_string(), t(a)]);
        summary.push(vec!["end".to_string(), t(b)]);
        summary.push(vec!["duration".to_string(), timefmt::seconds(b - a)]);
    }
    table(&mut html, "Summary", &["", ""], &summary);

    let plot = |html: &mut String,
                id: &str,
                svg: Result<String, Box<dyn std::error::Error>>|
     -> PlotResult {
        let _ = write!(
            html,
            "<figure id=\"{id}\" class=\"plot\">\n{}\n</figure>\n",
            svg?
        );
        Ok(())
    };
    plot(&mut html, "traffic", traffic_svg(r))?;

    let mut mix: Vec<(String, f64)> = r
        .protocols()
        .map(|(p, c)| {
            (
                protocol_name(p).map_or_else(|| format!("IP protocol {p}"), str::to_string),
                c.bytes as f64,
            )
        })
        .collect();
    let ip_bytes: u64 = r.protocols().map(|(_, c)| c.bytes).sum();
    if r.wire_bytes > ip_bytes {
        mix.push(("other".to_string(), (r.wire_bytes - ip_bytes) as f64));
    }
    mix.sort_by(|a, b| b.1.total_cmp(&a.1));
    plot(
        &mut html,
        "protocols",
        bars_svg("Protocol mix", "bytes", &mix, BLUE),
    )?;

    let sizes: Vec<(String, f64)> = (0..SIZE_BUCKETS.len())
        .map(|i| {
            let lo = if i == 0 { 0 } else { SIZE_BUCKETS[i - 1] + 1 };
            let label = match SIZE_BUCKETS[i] {
                u32::MAX => format!("{lo}+ bytes"),
                hi => format!("{lo}-{hi} bytes"),
            };
            (label, r.sizes[i].packets as f64)
        })
        .collect();
    plot(
        &mut html,
        "sizes",
        bars_svg("Packet sizes (wire length)", "packets", &sizes, GREEN),
    )?;

    let ports: Vec<(String, f64)> = top(r.ports(), 10)
        .into_iter()
        .map(|((p, port), c)| {
            let name = protocol_name(p).map_or_else(|| p.to_string(), str::to_string);
            (format!("{name}/{port}"), c.bytes as f64)
        })
        .collect();
    plot(
        &mut html,
        "ports",
        bars_svg("Top server ports", "bytes", &ports, MAGENTA),
    )?;

    let mut talkers_rows: Vec<(String, u64)> = talkers
        .iter()
        .flat_map(|e| e.rows())
        .map(|(a, c)| (a.to_string(), c.sent_bytes + c.received_bytes))
        .collect();
    talkers_rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    talkers_rows.truncate(10);
    let talkers_bars: Vec<(String, f64)> = talkers_rows
        .iter()
        .map(|(a, b)| (a.clone(), *b as f64))
        .collect();
    plot(
        &mut html,
        "talkers",
        bars_svg(
            "Top talkers (IP bytes sent and received)",
            "bytes",
            &talkers_bars,
            CYAN,
        ),
    )?;

    table(
        &mut html,
        "Network protocols",
        &["EtherType", "packets", "bytes"],
        &count_rows(r.network(), |t| match ethertype_name(t) {
            Some(n) => format!("0x{t:04x} ({n})"),
            None => format!("0x{t:04x}"),
        }),
    );
    table(
        &mut html,
        "Transport protocols",
        &["protocol", "packets", "bytes"],
        &count_rows(r.protocols(), |p| {
            protocol_name(p).map_or_else(|| p.to_string(), str::to_string)
        }),
    );
    table(
        &mut html,
        "Directions",
        &["direction", "packets", "bytes"],
        &count_rows(
            ["inbound", "outbound", "unknown"]
                .into_iter()
                .zip(r.directions),
            str::to_string,
        ),
    );
    let errors = vec![
        vec![
            "IPv4 header checksum errors".to_string(),
            r.ipv4_checksum_errors.to_string(),
        ],
        vec![
            "packets with anomalies".to_string(),
            r.with_anomalies.to_string(),
        ],
    ]
    .into_iter()
    .chain(
        r.anomalies()
            .map(|(a, n)| vec![a.name().to_string(), n.to_string()]),
    )
    .collect::<Vec<_>>();
    table(&mut html, "Errors", &["", "packets"], &errors);
    html.push_str("<p>Made by tracekit report.</p>\n</body>\n</html>\n");
    Ok(html)
}
