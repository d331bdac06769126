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
    let (layer, first, last) = end_costs(model, devices)?;
    let counts = balanced_counts(model.layers, devices, layer, first, last)?;
    Some(counts.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
}

/// Megatron's layouts with the embedding and the loss as stages of their own, for a family
/// that loops `chunks` chunks over `devices` devices (stage `g` on device `g mod devices`, as
/// interleaved 1F1B places them): `E|t*3|…|t*2|L`, `devices × chunks` stages, MTP layers with
/// `L`. Two ways to cut the layers, in this order, the second left out when it equals the first:
///
/// * each device balanced: every device takes its [`balanced_counts`] (the embedding's work on
///   device 0, the head's on the last), spread evenly over its stages other than `E` and `L`,
///   earlier stages taking the extra layer;
/// * each stage even, as Megatron's layouts are written: every stage but `E` and `L` takes
///   the same number of layers, the extra ones going to the stages of the least loaded devices.
///
/// Empty for fewer than two chunks, a model with a layout of its own or costs that cannot be
/// derived; a cut that leaves a share empty (fewer layers than stages) is left out.
pub fn own_ends_layouts(model: &Model, devices: u32, chunks: u32) -> Vec<String> {
    if model.layout.is_some() || chunks < 2 || devices < 2 {
        return Vec::new();
    }
    let (Some((layer, first, last)), Some(stages)) = (end_costs(model, devices), devices.checked_mul(chunks)) else {
        return Vec::new();
    };
    let (n, p) = (stages as usize, devices as usize);
    // This device's stages, in pipeline order, without the embedding's and the head's.
    let free = |d: usize| -> Vec<usize> {
        (0..chunks as usize).map(|k| d + k * p).filter(|&g| g != 0 && g + 1 != n).collect()
    };
    let mut cuts: Vec<Vec<u32>> = Vec::new();
    if let Some(counts) = balanced_counts(model.layers, devices, layer, first, last) {
        let mut cut = vec![0; n];
        for (d, &total) in counts.iter().enumerate() {
            let mine = free(d);
            let k = mine.len() as u32;
            for (i, &g) in mine.iter().enumerate() {
                cut[g] = (total + k - 1 - i as u32) / k.max(1);
            }
        }
        cuts.push(cut);
    }
    let middle = stages - 2;
    let (base, mut extra) = (model.layers / middle, model.layers % middle);
    let mut cut = vec![base; n];
    (cut[0], cut[n - 1]) = (0, 0);
    let mut load: Vec<f64> = (0..p).map(|d| f64::from(base) * free(d).len() as f64 * layer).collect();
    load[0] += first;
    load[p - 1] += last;
    while extra > 0 {
        let open =
            (1..n - 1).filter(|&g| cut[g] == base).min_by(|&a, &b| load[a % p].total_cmp(&load[b % p]).then(a.cmp(&b)));
        let Some(g) = open else { break };
        cut[g] += 1;
        load[g % p] += layer;
        extra -= 1;
    }
    cuts.push(cut);
    let mut out: Vec<String> = Vec::new();
    for cut in cuts {
        let mut pieces: Vec<crate::model::Piece> =
            cut.iter().map(|&layers| crate::model::Piece { layers, ..Default::default() }).collect();
        pieces[0].embedding = true;
        pieces[n - 1].loss = true;
        pieces[n - 1].mtp = model.mtp;
        let text = crate::model::Layout { pieces }.to_megatron();
        let laid = Model { layout: Some(text.clone()), ..model.clone() };
        if !out.contains(&text) && laid.derive(devices).is_ok() {
            out.push(text);
        }
    }
    out
}

/// One microbatch's F + B + W of a layer, and what the embedding's and the head's shares do
/// beyond their layers, from the model's even split: `(layer, first, last)`.
fn end_costs(model: &Model, devices: u32) -> Option<(f64, f64, f64)> {
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
    Some((layer, first, last))
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
    fn own_ends_layouts_hold_the_embedding_and_the_loss_alone_and_balance_each_device() {
        use crate::model::Layout;
        for name in ["llama-3-8b", "llama-3.2-1b", "zb-1.5b", "deepseek-v3"] {
            let m = crate::model::presets::model_preset(name).unwrap().model;
            for (devices, chunks) in [(4, 2), (8, 2), (8, 3), (8, 4), (16, 2)] {
                let what = format!("{name} P {devices} chunks {chunks}");
                let cuts = own_ends_layouts(&m, devices, chunks);
                // Only where layers run short of the stages is a cut left out.
                assert!(!cuts.is_empty() || m.layers < devices * chunks, "{what}: {cuts:?}");
                let Some(text) = cuts.first().cloned() else { continue };
                let layout = Layout::parse(&text, m.layers, devices).unwrap_or_else(|e| panic!("{what}: {text}: {e}"));
                assert_eq!(layout.to_megatron(), text, "{what}: reads back as written");
                let n = layout.stages();
                assert_eq!(n, (devices * chunks) as usize, "{what}: {text}");
                let (first, last) = (layout.pieces[0], layout.pieces[n - 1]);
                assert!(first.embedding && first.layers == 0 && !first.loss, "{what}: {text}");
                assert!(last.loss && last.layers == 0 && last.mtp == m.mtp, "{what}: {text}");
                // Each device (stage g on device g mod P) holds the balanced split's layers, as
                // evenly as its stages other than E and L can take them.
                let share: Vec<u32> =
                    balanced_layout(&m, devices).unwrap().split(',').map(|c| c.parse().unwrap()).collect();
                for (d, &total) in share.iter().enumerate() {
                    let mine: Vec<u32> = (0..chunks as usize)
                        .map(|k| d + k * devices as usize)
                        .filter(|&g| g != 0 && g + 1 != n)
                        .map(|g| layout.pieces[g].layers)
                        .collect();
                    assert_eq!(mine.iter().sum::<u32>(), total, "{what}: device {d} of {text}");
                    assert!(mine.iter().max().unwrap() - mine.iter().min().unwrap() <= 1, "{what}: {text}");
                }
                // The last cut (the second, or both when they are one): every stage but E and
                // L within a layer of the others.
                if let Some(even) = cuts.last() {
                    let l = Layout::parse(even, m.layers, devices).unwrap();
                    let mid: Vec<u32> = l.pieces[1..l.stages() - 1].iter().map(|p| p.layers).collect();
                    assert!(mid.iter().max().unwrap() - mid.iter().min().unwrap() <= 1, "{what}: {even}");
                    assert!(l.pieces[0].layers == 0 && l.pieces[l.stages() - 1].loss, "{what}: {even}");
                }
            }
        }
        let m = crate::model::presets::model_preset("llama-3-8b").unwrap().model;
        assert!(own_ends_layouts(&m, 8, 1).is_empty(), "one chunk: E alone would take a device");
        assert!(own_ends_layouts(&Model { layout: Some("4,4".into()), ..m.clone() }, 8, 2).is_empty());
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
