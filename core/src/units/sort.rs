//! Stable sorts that share one compiled sort.
//!
//! Every call of the standard library's `sort_by` compiles its own copy of the sorting
//! algorithm (about 3 KB of wasm each: sixty of them were a tenth of the playground's module).
//! These sort a permutation of indices with one comparison behind a `dyn` call, so the
//! algorithm is compiled once, then move the items into place. Ties keep their order, as in
//! `sort_by`. For cold lists (planning, reports, bounds); hot inner loops keep the standard
//! sorts.

use std::cmp::Ordering;

/// Sorts `v` by `compare`, stably: the order `v.sort_by(compare)` gives.
pub fn sort_by<T>(v: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let order = sorted_order(v.len(), &mut |a, b| compare(&v[a], &v[b]));
    permute(v, order);
}

/// Sorts `v` by the key `key` gives, stably: the order `v.sort_by_key(key)` gives.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// The indices `0..n` in sorted order under `compare`, ties by index (so stable).
fn sorted_order(n: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| compare(a, b).then(a.cmp(&b)));
    order
}

/// Moves `v[order[i]]` to position `i`, following each cycle of the permutation once.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for start in 0..v.len() {
        // Positions already placed point at themselves.
        let mut i = start;
        while order[i] != start {
            let from = order[i];
            v.swap(i, from);
            order[i] = i;
            i = from;
        }
        order[i] = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sorts_as_the_standard_stable_sort(items in proptest::collection::vec((0u8..6, any::<u16>()), 0..200)) {
            // Keys with many ties: the payload shows whether ties kept their order.
            let mut ours = items.clone();
            sort_by_key(&mut ours, |p| p.0);
            let mut std = items.clone();
            std.sort_by_key(|p| p.0);
            prop_assert_eq!(&ours, &std);
            let mut ours = items.clone();
            sort_by(&mut ours, |a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut std = items;
            std.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            prop_assert_eq!(ours, std);
        }
    }
}
