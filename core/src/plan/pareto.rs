//! The memory/time Pareto front: the runs no other run beats on both peak memory and cost.

/// One run on the memory/time plane, as the Pareto chart draws it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParetoPoint<'a> {
    /// Its family's name (the colour and the legend entry).
    pub family: &'a str,
    /// Peak activation memory per device.
    pub peak_memory: f64,
    /// Time per iteration (the cost).
    pub cost: f64,
    /// Whether it is on the Pareto front.
    pub pareto: bool,
    /// Whether it recomputes or offloads (drawn hollow).
    pub traded: bool,
}

/// Relative tolerance of the front's comparisons: two coordinates this close are equal, so
/// floating sums of the same costs taken in another order (21.7 and 21.699999999999996) do
/// not decide who is on the front.
pub const TOLERANCE: f64 = 1e-9;

/// Whether `a` and `b` are equal within [`TOLERANCE`] of the larger.
fn close(a: f64, b: f64) -> bool {
    let d = (a - b).abs();
    d.is_finite() && d <= TOLERANCE * a.abs().max(b.abs())
}

/// `a ≤ b` within the tolerance.
fn at_most(a: f64, b: f64) -> bool {
    a <= b || close(a, b)
}

/// `a < b` beyond the tolerance.
fn below(a: f64, b: f64) -> bool {
    a < b && !close(a, b)
}

/// Which of `points` — `(peak memory, cost)`, both to minimise — are on the Pareto front: no
/// other point [`dominates`] it. Equal points (within [`TOLERANCE`]) are all on the front; a
/// point with a NaN coordinate never is. O(n log n).
///
/// Both comparisons are monotone in the other point's value (the points `at_most` some value
/// are all below a threshold, and so are those `below` it), so in memory order the points
/// that could dominate `p` are a prefix, whose memory is `below` p's and whose least cost
/// decides, and the window after it, whose memory is within the tolerance of p's and whose
/// least cost must be `below` p's.
pub fn front(points: &[(f64, f64)]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..points.len()).filter(|&i| !points[i].0.is_nan() && !points[i].1.is_nan()).collect();
    crate::units::sort::sort_by(&mut order, |&a, &b| {
        points[a].0.total_cmp(&points[b].0).then(points[a].1.total_cmp(&points[b].1))
    });
    let memory: Vec<f64> = order.iter().map(|&i| points[i].0).collect();
    let cost: Vec<f64> = order.iter().map(|&i| points[i].1).collect();
    let n = order.len();
    // Least cost of every prefix, and a sparse table of least costs over ranges.
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(f64::INFINITY);
    for &c in &cost {
        let last = prefix[prefix.len() - 1];
        prefix.push(c.min(last));
    }
    let mut table: Vec<Vec<f64>> = vec![cost.clone()];
    let mut width = 1;
    while 2 * width <= n {
        let prev = &table[table.len() - 1];
        let next: Vec<f64> = (0..=n - 2 * width).map(|i| prev[i].min(prev[i + width])).collect();
        table.push(next);
        width *= 2;
    }
    let least = |from: usize, to: usize| -> f64 {
        // Over `from..to`, non-empty.
        let level = (usize::BITS - 1 - (to - from).leading_zeros()) as usize;
        table[level][from].min(table[level][to - (1 << level)])
    };
    let mut on = vec![false; points.len()];
    for (k, &i) in order.iter().enumerate() {
        let (m, c) = (memory[k], cost[k]);
        let lower = memory.partition_point(|&x| below(x, m));
        let upper = memory.partition_point(|&x| at_most(x, m));
        let by_memory = at_most(prefix[lower], c);
        let by_cost = upper > lower && below(least(lower, upper), c);
        on[i] = !by_memory && !by_cost;
    }
    on
}

/// Whether `a` dominates `b`: at most as large in both coordinates, smaller in one, both
/// within [`TOLERANCE`].
pub fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    at_most(a.0, b.0) && at_most(a.1, b.1) && (below(a.0, b.0) || below(a.1, b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute_force(points: &[(f64, f64)]) -> Vec<bool> {
        points.iter().map(|&p| !p.0.is_nan() && !p.1.is_nan() && !points.iter().any(|&q| dominates(q, p))).collect()
    }

    #[test]
    fn a_small_front() {
        let pts = [(1.0, 10.0), (2.0, 5.0), (2.0, 6.0), (3.0, 5.0), (4.0, 1.0), (1.0, 10.0), (5.0, 1.0)];
        assert_eq!(front(&pts), vec![true, true, false, false, true, true, false]);
        assert_eq!(front(&[]), Vec::<bool>::new());
        assert_eq!(front(&[(f64::NAN, 1.0), (1.0, 1.0)]), vec![false, true]);
    }

    #[test]
    fn rounding_noise_does_not_change_the_front() {
        // sweep --schedules v-half,seq1f1b -p 4 -m 4 --f 1,1,1,2 --comm 0.2: seq1f1b holds less
        // at the same cost, only summed in another order.
        let pts = [(3.0, 21.699999999999996), (2.5, 21.7)];
        assert_eq!(front(&pts), vec![false, true]);
        assert!(dominates(pts[1], pts[0]));
        // Memory alike: 0.1 + 0.2 is 0.3.
        assert_eq!(front(&[(0.1 + 0.2, 5.0), (0.3, 4.0)]), vec![false, true]);
        assert_eq!(front(&[(0.1 + 0.2, 4.0), (0.3, 4.0)]), vec![true, true]);
    }

    /// `v` moved by `k` units in the last place.
    fn nudged(v: f64, k: i8) -> f64 {
        let mut x = v;
        for _ in 0..k.unsigned_abs() {
            x = if k > 0 { x.next_up() } else { x.next_down() };
        }
        x
    }

    proptest! {
        /// The front is that of the grid values however their last bits fall: noise of a few
        /// units in the last place changes no flag.
        #[test]
        fn pareto_front_ignores_rounding_noise(
            grid in proptest::collection::vec((1u8..8, 1u8..8, -4i8..5, -4i8..5), 0..40),
        ) {
            let exact: Vec<(f64, f64)> = grid.iter().map(|&(a, b, _, _)| (f64::from(a) * 0.1, f64::from(b) * 2.17)).collect();
            let noisy: Vec<(f64, f64)> =
                grid.iter().zip(&exact).map(|(&(_, _, x, y), &(m, c))| (nudged(m, x), nudged(c, y))).collect();
            prop_assert_eq!(front(&noisy), front(&exact));
            prop_assert_eq!(front(&noisy), brute_force(&noisy));
        }

        /// The flag equals a brute-force dominance check, on coarse grids (many ties) and
        /// arbitrary values.
        #[test]
        fn front_equals_brute_force(
            grid in proptest::collection::vec((0u8..6, 0u8..6), 0..40),
            free in proptest::collection::vec((0.0f64..1e3, 0.0f64..1e3), 0..40),
        ) {
            let coarse: Vec<(f64, f64)> = grid.iter().map(|&(a, b)| (f64::from(a), f64::from(b))).collect();
            prop_assert_eq!(front(&coarse), brute_force(&coarse));
            prop_assert_eq!(front(&free), brute_force(&free));
        }
    }
}
