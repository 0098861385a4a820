//! `--plot FILE.svg`: throughput per interval, the total and each thread, as a
//! self-contained SVG any browser shows (no scripts, no external fonts or styles).

use std::fmt::Write;

use crate::render::xml::escape;
use crate::timeline::IntervalSample;

const W: f64 = 800.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// Colors for the per-thread lines (the total is drawn in black).
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// A round step for `max` split into about five ticks.
fn step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    // A power of ten from whole multiplications, and a negative one as 1 / 10^n: both
    // correctly rounded on every platform (a libm's powf or powi may be off by an ulp,
    // and the ticks then read 0.10000000000000002).
    let e = raw.log10().floor() as i32;
    let mag = if e < 0 {
        1.0 / (0..-e).fold(1.0, |m, _| m * 10.0)
    } else {
        (0..e).fold(1.0, |m, _| m * 10.0)
    };
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Gbit/s of `bytes` moved in the interval `s`.
fn gbit(bytes: u64, s: &IntervalSample) -> f64 {
    crate::stats::bits_per_second(bytes, s.end_s - s.start_s) / 1e9
}

/// Renders the chart; `samples` are one side's intervals in order.
pub(crate) fn svg(title: &str, samples: &[IntervalSample]) -> String {
    let threads = samples.first().map_or(0, |s| s.thread_bytes.len());
    let total: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| (s.end_s, gbit(s.thread_bytes.iter().sum(), s)))
        .collect();
    let chart = Chart::fitting(&total);
    let mut o = String::new();
    chart.frame(&mut o, title);
    // One polyline per thread, then the total on top.
    for k in 0..threads {
        let pts: Vec<(f64, f64)> = samples
            .iter()
            .map(|s| (s.end_s, gbit(s.thread_bytes[k], s)))
            .collect();
        let color = PALETTE[k % PALETTE.len()];
        chart.series(&mut o, &pts, color, 1.2, &format!("thread {k}"), k + 1);
    }
    chart.series(&mut o, &total, "#000", 2.5, "total", 0);
    o.push_str("</svg>\n");
    o
}

/// The plot area and its scales.
struct Chart {
    /// Seconds at the right edge.
    t_max: f64,
    /// Gbit/s at the top edge, and between grid lines.
    y_max: f64,
    ystep: f64,
    xstep: f64,
    /// Plot width and height.
    pw: f64,
    ph: f64,
}

impl Chart {
    /// Scales that fit the total line (the highest).
    fn fitting(total: &[(f64, f64)]) -> Self {
        let t_max = total.last().map_or(1.0, |p| p.0).max(1e-3);
        let y_top = total.iter().map(|p| p.1).fold(0.0, f64::max);
        let ystep = step(if y_top > 0.0 { y_top } else { 1.0 });
        Self {
            t_max,
            y_max: (y_top / ystep).ceil().max(1.0) * ystep,
            ystep,
            xstep: step(t_max),
            pw: W - LEFT - RIGHT,
            ph: H - TOP - BOTTOM,
        }
    }

    fn x(&self, t: f64) -> f64 {
        LEFT + t / self.t_max * self.pw
    }

    fn y(&self, v: f64) -> f64 {
        TOP + self.ph - v / self.y_max * self.ph
    }

    /// The document start, title, grid, axes and their labels.
    fn frame(&self, o: &mut String, title: &str) {
        let (pw, ph) = (self.pw, self.ph);
        let _ = writeln!(
            o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
             viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
        );
        let _ = writeln!(o, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">{}</text>",
            LEFT + pw / 2.0,
            escape(title)
        );
        self.grid(o);
        let _ = writeln!(
            o,
            "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#333\"/>"
        );
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">seconds since counting started</text>",
            LEFT + pw / 2.0,
            H - 12.0
        );
        let _ = writeln!(
            o,
            "<text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\">Gbit/s</text>",
            TOP + ph / 2.0
        );
    }

    /// Grid lines with their labels: Gbit/s across, seconds up.
    fn grid(&self, o: &mut String) {
        let decimals = if self.ystep >= 1.0 {
            0
        } else {
            (-self.ystep.log10().floor()) as usize
        };
        let mut v = 0.0;
        while v <= self.y_max + self.ystep / 2.0 {
            let yy = self.y(v);
            let _ = writeln!(
                o,
                "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.decimals$}</text>",
                LEFT + self.pw,
                LEFT - 6.0,
                yy + 4.0
            );
            v += self.ystep;
        }
        let mut t = 0.0;
        while t <= self.t_max + 1e-9 {
            let xx = self.x(t);
            let _ = writeln!(
                o,
                "<line x1=\"{xx:.1}\" y1=\"{TOP}\" x2=\"{xx:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
                TOP + self.ph,
                TOP + self.ph + 16.0
            );
            t += self.xstep;
        }
    }

    /// One line of (seconds, Gbit/s) points, drawn from 0 s, with its legend entry in
    /// legend row `row`.
    fn series(
        &self,
        o: &mut String,
        pts: &[(f64, f64)],
        color: &str,
        width: f64,
        label: &str,
        row: usize,
    ) {
        let points: Vec<String> = std::iter::once((0.0, pts.first().map_or(0.0, |p| p.1)))
            .chain(pts.iter().copied())
            .map(|(t, v)| format!("{:.1},{:.1}", self.x(t), self.y(v)))
            .collect();
        let _ = writeln!(
            o,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"{width}\" points=\"{}\"/>",
            points.join(" ")
        );
        let ly = TOP + 8.0 + row as f64 * 16.0;
        let lx = LEFT + self.pw + 12.0;
        let _ = writeln!(
            o,
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"{width}\"/>\
             <text x=\"{}\" y=\"{}\">{}</text>",
            lx + 18.0,
            lx + 24.0,
            ly + 4.0,
            escape(label)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: usize, bytes: [u64; 2]) -> IntervalSample {
        IntervalSample {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            direction: crate::config::Direction::Send,
            thread_bytes: bytes.to_vec(),
            planned_s: Some(4.0),
            udp_loss: None,
            rr: None,
            connect: None,
            cpu_busy_percent: None,
        }
    }

    #[test]
    fn one_line_per_thread_plus_the_total() {
        let s: Vec<_> = (0..4)
            .map(|i| sample(i, [125_000_000, 250_000_000]))
            .collect();
        let out = svg("sender <&> 127.0.0.1", &s);
        let doc = roxmltree::Document::parse(&out).expect("well-formed SVG");
        let lines: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .collect();
        assert_eq!(lines.len(), 3, "two threads and the total");
        // The total (last) runs at 3 Gbit/s: 375 MB per second.
        let total = lines[2].attribute("points").unwrap();
        assert_eq!(
            total.split(' ').count(),
            5,
            "origin + one point per interval"
        );
        assert!(out.contains("&lt;&amp;&gt;"), "title escaped");
        assert_eq!(step(3.0), 1.0);
        assert_eq!(step(47.0), 10.0);
        assert_eq!(step(0.3), 0.1);
        // No samples still gives a valid (empty) chart.
        roxmltree::Document::parse(&svg("empty", &[])).expect("valid empty chart");
    }
}
