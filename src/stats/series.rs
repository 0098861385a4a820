//! The formulas of a series of runs: min, median, max, mean, standard deviation and the
//! 95 % confidence interval of the mean (Student's t).

use crate::report::merge::Spread as Range;
use crate::report::series::{Series, Spread};
use crate::report::{Report, Side};

/// Student's t at 97.5 % (a two-sided 95 % interval) for 1 to 30 degrees of freedom;
/// past 30 the normal 1.96 is within 2 %.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The spread of `v` (at least one value).
pub(crate) fn spread(v: &[f64]) -> Spread {
    let Range { min, median, max } = Range::of(v);
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n.max(1) as f64;
    let stddev = (n > 1).then(|| {
        let ss: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
        (ss / (n - 1) as f64).sqrt()
    });
    let half = stddev.map(|s| T_975.get(n - 2).copied().unwrap_or(1.96) * s / (n as f64).sqrt());
    Spread {
        min,
        median,
        max,
        mean,
        stddev,
        ci95_low: half.map(|h| mean - h),
        ci95_high: half.map(|h| mean + h),
    }
}

/// A run's throughput: its receiver's report where it has one (loopback, or one sent
/// back), else its own first report's.
pub(crate) fn throughput(reports: &[Report]) -> f64 {
    let rx = reports.iter().find(|r| r.side == Side::Receiver);
    rx.or(reports.first())
        .map_or(0.0, |r| r.totals.bits_per_second)
}

/// The series of `runs` (each run's reports), of `asked` runs.
pub(crate) fn series(asked: u32, runs: &[Vec<Report>]) -> Series {
    let bits_per_second: Vec<f64> = runs.iter().map(|r| throughput(r)).collect();
    Series {
        asked,
        runs: runs.len(),
        summary: spread(&bits_per_second),
        bits_per_second,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_of_a_series_and_its_confidence_interval() {
        let s = spread(&[9.0, 10.0, 11.0]);
        assert_eq!((s.min, s.median, s.max, s.mean), (9.0, 10.0, 11.0, 10.0));
        assert!((s.stddev.unwrap() - 1.0).abs() < 1e-12);
        // t(0.975, 2) = 4.303: 10 ± 4.303 / sqrt(3).
        let half = 4.303 / 3f64.sqrt();
        assert!((s.ci95_low.unwrap() - (10.0 - half)).abs() < 1e-9);
        assert!((s.ci95_high.unwrap() - (10.0 + half)).abs() < 1e-9);
        let one = spread(&[5.0]);
        assert_eq!((one.mean, one.stddev, one.ci95_low), (5.0, None, None));
        // Past 30 degrees of freedom the normal quantile.
        let many: Vec<f64> = (0..40).map(f64::from).collect();
        let m = spread(&many);
        let half = 1.96 * m.stddev.unwrap() / 40f64.sqrt();
        assert!((m.ci95_high.unwrap() - m.mean - half).abs() < 1e-9);
    }
}
