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
}

/// Which of `points` — `(peak memory, cost)`, both to minimise — are on the Pareto front: no
/// other point is at most as large in both and strictly smaller in one. Equal points are all on
/// the front; a point with a NaN coordinate never is. O(n log n).
pub fn front(points: &[(f64, f64)]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..points.len()).filter(|&i| !points[i].0.is_nan() && !points[i].1.is_nan()).collect();
    // By memory, then cost: a point is on the front when its cost is below every cost seen at
    // strictly smaller memory, and the smallest at its own memory.
    order.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0).then(points[a].1.total_cmp(&points[b].1)));
    let mut on = vec![false; points.len()];
    let mut best = f64::INFINITY; // lowest cost at memory below the current group
    let mut i = 0;
    while i < order.len() {
        let memory = points[order[i]].0;
        let group_min = points[order[i]].1;
        let mut j = i;
        while j < order.len() && points[order[j]].0 == memory {
            let cost = points[order[j]].1;
            on[order[j]] = cost == group_min && cost < best;
            j += 1;
        }
        best = best.min(group_min);
        i = j;
    }
    on
}

/// Whether `a` dominates `b`: at most as large in both coordinates, strictly smaller in one.
pub fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 <= b.0 && a.1 <= b.1 && (a.0 < b.0 || a.1 < b.1)
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

    proptest! {
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
