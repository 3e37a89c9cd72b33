//! A log-log line chart as SVG text, so a bench can draw its own figures without a plotting
//! dependency: decade grid lines, one polyline per series, a marker at each median and a bar
//! from the first to the third quartile.

use std::fmt::Write as _;

use crate::interleave::Quartiles;

/// One line of the chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// An SVG colour.
    pub colour: &'static str,
    /// `(x, quartiles of y)`, x ascending; every figure must be positive (log axes).
    pub points: Vec<(f64, Quartiles)>,
}

/// The chart's texts.
#[derive(Clone, Copy, Debug)]
pub struct Labels<'a> {
    /// The heading.
    pub title: &'a str,
    /// A line under the heading (where and when it was measured).
    pub subtitle: &'a str,
    /// The x axis.
    pub x: &'a str,
    /// The y axis.
    pub y: &'a str,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 500.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 220.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 60.0;

/// The chart as a standalone SVG document.
pub fn log_log(labels: Labels<'_>, series: &[Series]) -> String {
    let figures = || {
        series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|(x, q)| *x > 0.0 && q.q1 > 0.0)
    };
    let decade_bounds = |values: Vec<f64>| {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() && hi.is_finite() {
            (
                lo.log10().floor(),
                hi.log10().ceil().max(lo.log10().floor() + 1.0),
            )
        } else {
            (0.0, 1.0)
        }
    };
    let (x0, x1) = decade_bounds(figures().map(|(x, _)| *x).collect());
    let (y0, y1) = decade_bounds(figures().flat_map(|(_, q)| [q.q1, q.q3]).collect());
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x.log10() - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| TOP + plot_h - (y.log10() - y0) / (y1 - y0) * plot_h;

    let mut svg = String::new();
    // `write!` into a `String` cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="28" font-size="16" font-weight="bold">{}</text>"#,
        escape(labels.title)
    );
    let _ = writeln!(
        svg,
        r##"<text x="{LEFT}" y="48" fill="#555">{}</text>"##,
        escape(labels.subtitle)
    );
    for d in (x0 as i32)..=(x1 as i32) {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0,
            decade_label(d, "")
        );
    }
    for d in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 8.0,
            y + 4.0,
            decade_label(d, " µs")
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 18.0,
        escape(labels.x)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(22 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + plot_h / 2.0,
        escape(labels.y)
    );
    for (k, s) in series.iter().enumerate() {
        let points: Vec<(f64, Quartiles)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, q)| *x > 0.0 && q.q1 > 0.0)
            .collect();
        let path: Vec<String> = points
            .iter()
            .map(|(x, q)| format!("{:.1},{:.1}", px(*x), py(q.median)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
            path.join(" "),
            s.colour
        );
        for (x, q) in &points {
            let (cx, lo, hi, mid) = (px(*x), py(q.q1), py(q.q3), py(q.median));
            let _ = writeln!(
                svg,
                r#"<line x1="{cx:.1}" y1="{lo:.1}" x2="{cx:.1}" y2="{hi:.1}" stroke="{c}" stroke-width="1.5"/><circle cx="{cx:.1}" cy="{mid:.1}" r="3.5" fill="{c}"/>"#,
                c = s.colour
            );
        }
        let ly = TOP + 10.0 + k as f64 * 22.0;
        let lx = LEFT + plot_w + 16.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 22.0,
            s.colour,
            lx + 28.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    let ly = TOP + 10.0 + series.len() as f64 * 22.0 + 8.0;
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{ly:.1}" fill="#555">dot: median; bar: quartiles</text>"##,
        LEFT + plot_w + 16.0
    );
    svg.push_str("</svg>\n");
    svg
}

fn decade_label(d: i32, unit: &str) -> String {
    let value = match d {
        ..=-1 => format!("{}", 10f64.powi(d)),
        0..=3 => format!("{}", 10u64.pow(d as u32)),
        _ => format!("1e{d}"),
    };
    format!("{value}{unit}")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Today's date (UTC) as `YYYY-MM-DD`, for the figures' and tables' captions.
pub fn utc_date_today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
