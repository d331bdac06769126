//! The layer split that balances a pipeline's work: how many transformer layers each device's
//! share takes when the first share also runs the embedding and the last the LM head and loss,
//! so that the busiest share does as little as possible. What `plan` tries beside the even
//! split, and what `simulate` can be given as `--layout`. Uses model only.

use crate::model::Model;

/// Layers per share for `layers` layers on `devices` shares, each layer costing `layer`, the
/// first share `first` more and the last `last` more: the split whose largest share costs the
/// least, and among those the one whose shares differ least. A share may take no layer (its
/// end of the model alone outweighs layers).
///
/// `None` when there is nothing to split (no device, or a layer costing nothing).
pub fn balanced_counts(layers: u32, devices: u32, layer: f64, first: f64, last: f64) -> Option<Vec<u32>> {
    if devices == 0 || layer.is_nan() || layer <= 0.0 || !first.is_finite() || !last.is_finite() {
        return None;
    }
    let extra = |i: u32| {
        let mut e = 0.0;
        if i == 0 {
            e += first.max(0.0);
        }
        if i + 1 == devices {
            e += last.max(0.0);
        }
        e
    };
    let capacity = |limit: f64, i: u32| -> u32 {
        let room = (limit - extra(i)) / layer;
        if room < 0.0 {
            0
        } else {
            // A hair of slack so a limit met exactly by k layers admits k.
            (room + 1e-9).floor().min(f64::from(layers)) as u32
        }
    };
    let fits = |limit: f64| {
        (0..devices).all(|i| extra(i) <= limit + 1e-9)
            && (0..devices).map(|i| u64::from(capacity(limit, i))).sum::<u64>() >= u64::from(layers)
    };
    // The least limit is some share's cost at a whole number of layers.
    let mut limits: Vec<f64> =
        (0..devices).flat_map(|i| (0..=layers).map(move |k| f64::from(k) * layer + extra(i))).collect();
    limits.sort_by(f64::total_cmp);
    limits.dedup();
    let best = limits.into_iter().find(|&l| fits(l))?;
    let mut counts: Vec<u32> = (0..devices).map(|i| capacity(best, i)).collect();
    // Give back the surplus from the heaviest shares, so the rest differ least.
    let mut surplus = counts.iter().map(|&c| u64::from(c)).sum::<u64>() - u64::from(layers);
    while surplus > 0 {
        let cost = |i: usize| f64::from(counts[i]) * layer + extra(i as u32);
        let heaviest = (0..counts.len()).filter(|&i| counts[i] > 0).max_by(|&a, &b| cost(a).total_cmp(&cost(b)))?;
        counts[heaviest] -= 1;
        surplus -= 1;
    }
    Some(counts)
}

/// The balanced split of `model` on `devices` shares, as a layout (`4,5,5,2`), priced by one
/// microbatch's F + B + W of a middle share's layer and of the two ends: `None` when the model
/// has a layout of its own, fewer than three devices, or costs that cannot be derived.
pub fn balanced_layout(model: &Model, devices: u32) -> Option<String> {
    if model.layout.is_some() || devices < 3 {
        return None;
    }
    let even = crate::model::Layout::even(model.layers, devices);
    let text = even.pieces.iter().map(|p| p.layers.to_string()).collect::<Vec<_>>().join(",");
    let mut m = model.clone();
    m.layout = Some(text);
    let derived = m.derive(devices).ok()?;
    let shares = derived.shares();
    let work = |s: &crate::model::PieceCosts| s.f + s.b + s.w;
    let (head, tail) = (shares.first()?, shares.last()?);
    let middle = shares.get(1..shares.len() - 1)?.iter().find(|s| s.piece.layers > 0)?;
    let layer = work(middle) / f64::from(middle.piece.layers);
    let first = work(head) - f64::from(head.piece.layers) * layer;
    let last = work(tail) - f64::from(tail.piece.layers) * layer;
    let counts = balanced_counts(model.layers, devices, layer, first, last)?;
    Some(counts.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn worst(counts: &[u32], layer: f64, first: f64, last: f64) -> f64 {
        let n = counts.len();
        counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                f64::from(c) * layer + if i == 0 { first } else { 0.0 } + if i + 1 == n { last } else { 0.0 }
            })
            .fold(0.0, f64::max)
    }

    /// Every split of `layers` into `devices` shares, for the brute force.
    fn splits(layers: u32, devices: u32) -> Vec<Vec<u32>> {
        if devices == 1 {
            return vec![vec![layers]];
        }
        (0..=layers)
            .flat_map(|k| {
                splits(layers - k, devices - 1).into_iter().map(move |mut rest| {
                    rest.insert(0, k);
                    rest
                })
            })
            .collect()
    }

    proptest! {
        #[test]
        fn no_split_has_a_lighter_busiest_share(
            layers in 1u32..13, devices in 1u32..5, layer in 0.5f64..4.0, first in 0.0f64..10.0, last in 0.0f64..20.0,
        ) {
            let counts = balanced_counts(layers, devices, layer, first, last).unwrap();
            prop_assert_eq!(counts.len(), devices as usize);
            prop_assert_eq!(counts.iter().sum::<u32>(), layers);
            let best = splits(layers, devices).iter().map(|s| worst(s, layer, first, last)).fold(f64::INFINITY, f64::min);
            prop_assert!((worst(&counts, layer, first, last) - best).abs() <= 1e-9 * best.max(1.0),
                "{:?}: {} against {}", counts, worst(&counts, layer, first, last), best);
        }
    }

    #[test]
    fn equal_ends_split_evenly_and_a_heavy_head_empties_the_last_share() {
        assert_eq!(balanced_counts(8, 4, 1.0, 0.0, 0.0).unwrap(), vec![2, 2, 2, 2]);
        // The head is worth 5 layers: the last share keeps none, the rest take 4 each.
        assert_eq!(balanced_counts(12, 4, 1.0, 0.0, 5.0).unwrap(), vec![4, 4, 4, 0]);
        assert_eq!(balanced_counts(4, 0, 1.0, 0.0, 0.0), None);
        assert_eq!(balanced_counts(4, 2, 0.0, 0.0, 0.0), None);
    }

    #[test]
    fn a_large_vocabulary_moves_layers_off_both_ends() {
        // Llama 3.2 1B: 16 layers, a 128k vocabulary on 8 devices.
        let m = crate::model::presets::model_preset("llama-3.2-1b").unwrap().model;
        let layout = balanced_layout(&m, 8).unwrap();
        let counts: Vec<u32> = layout.split(',').map(|c| c.parse().unwrap()).collect();
        assert_eq!(counts.iter().sum::<u32>(), 16);
        assert!(counts[7] < 2 && counts[0] <= 2, "{layout}");
        assert!(counts[1..7].iter().all(|&c| c >= 2), "{layout}");
    }
}
