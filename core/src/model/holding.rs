//! What each device holds of a model under a schedule's placement, and why the busiest device
//! is the busiest: the playground's verdict line and the CLI's bottleneck line.

use super::Derived;
use crate::params::{Costs, StageCosts};
use crate::schedule::Placement;
use crate::stats::Bottleneck;

/// One device's part of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Holding {
    /// Transformer layers it holds; fractional when a family's stages cut a layer.
    pub layers: f64,
    /// Whether it holds the embedding.
    pub embedding: bool,
    /// Whether it holds the LM head and the loss, or a part of them (a stage that cuts the
    /// last piece carries its share of the head's cost).
    pub loss: bool,
    /// Multi-token-prediction layers it holds (`m` in a layout), cut like `layers`.
    pub mtp: f64,
}

impl Derived {
    /// Whether a schedule of `stages` stages per pipeline
    /// ([`crate::Placement::stages_per_pipeline`]) runs more stages than there are devices
    /// with no whole-layer cut of that many pieces ([`Derived::finer`]: a layout was given with fewer
    /// stages, or the layers do not divide), so each stage is a proportional part of the
    /// pieces — the LM head and the embedding split across stages, and layers where they do
    /// not divide; the note saying so, with the fix (its subject is the schedule: "`zb-v` runs
    /// …").
    pub fn proportional_cut_note(&self, stages: u32) -> Option<String> {
        // A multiple of the stages merges whole pieces; a matching finer cut is used as is.
        let whole =
            self.pieces.len() % stages.max(1) as usize == 0 || self.finer.iter().any(|f| f.len() == stages as usize);
        (stages > self.devices && !whole).then(|| {
            format!(
                "{stages} stages on {} devices, but the model is cut into {} pieces: each stage takes a proportional part of their costs, which splits the LM head and the embedding across stages (and layers, where they do not divide); give a layout of {stages} stages to place every layer",
                self.devices,
                self.pieces.len()
            )
        })
    }

    /// The error for a given layout (`--layout`, `given`) with more stages than a schedule
    /// runs per pipeline (`stages`: devices × chunks): each of its stages would take several
    /// of the layout's, which Megatron refuses (a layout names one stage per virtual stage);
    /// `None` when the layout fits or none was given.
    pub fn layout_stage_error(&self, given: bool, stages: u32) -> Option<crate::error::ParamError> {
        let pieces = self.pieces.len();
        (given && pieces > stages as usize).then(|| {
            let chunks = (stages / self.devices.max(1)).max(1);
            crate::error::ParamError::new(
                crate::error::Field::Layout,
                format!(
                    "the layout has {pieces} stages, more than the {stages} this schedule runs ({} devices × {chunks} chunk{})",
                    self.devices,
                    if chunks == 1 { "" } else { "s" }
                ),
            )
            .hint(format!("give a layout of {stages} stages, one per device and chunk, in pipeline order"))
            .hint(format!(
                "or run a family with {} chunks per device (e.g. -s interleaved-1f1b --chunks {})",
                pieces / self.devices.max(1) as usize,
                pieces / self.devices.max(1) as usize
            ))
        })
    }

    /// Each device's part of the model under `placement`: its stages' layers, cut from the
    /// pieces exactly as the simulator cuts their costs (stage `j` of `S` takes the model
    /// from `j/S` to `(j+1)/S`), and whether it holds the first or the last stage.
    pub fn holdings(&self, placement: &Placement) -> Vec<Holding> {
        let profile = self.quantity_profile(|p| f64::from(p.piece.layers));
        let costs = Costs::default().with_profile(profile, self.devices);
        let table = StageCosts::new(&costs, placement);
        // Stage j of S covers pieces [j·N/S, (j+1)·N/S) of the cut it runs (the finer one with
        // S pieces when there is one): it carries (a part of) the embedding or the LM head
        // when that range reaches the first or the last piece, as its costs do.
        let per = placement.stages_per_pipeline().max(1);
        let cut = self.finer.iter().find(|f| f.len() == per as usize).map_or(self.pieces.len(), Vec::len);
        let (n, per) = (cut as f64, f64::from(per));
        let covers_first = |j: u32| f64::from(j) * n / per < 1.0;
        let covers_last = |j: u32| f64::from(j + 1) * n / per > n - 1.0;
        let embedding = self.pieces.first().is_some_and(|p| p.piece.embedding);
        let loss = self.pieces.last().is_some_and(|p| p.piece.loss);
        let mtp = self.pieces.iter().any(|p| p.piece.mtp > 0).then(|| {
            let costs = Costs::default().with_profile(self.quantity_profile(|p| f64::from(p.piece.mtp)), self.devices);
            StageCosts::new(&costs, placement)
        });
        let mut out =
            vec![Holding { layers: 0.0, embedding: false, loss: false, mtp: 0.0 }; placement.devices() as usize];
        for g in 0..placement.stages() {
            let Some(h) = placement.device_of(g).and_then(|d| out.get_mut(d as usize)) else { continue };
            h.layers += table.f.get(g as usize).copied().unwrap_or(0.0);
            h.mtp += mtp.as_ref().and_then(|t| t.f.get(g as usize)).copied().unwrap_or(0.0);
            let local = placement.local_stage(g);
            h.embedding |= embedding && covers_first(local);
            h.loss |= loss && covers_last(local);
        }
        out
    }
}

/// The bottleneck in one line: "device 7 does 23% more work than the mean: the LM head".
/// With what the devices hold, it says why: the LM head, the embedding, or more layers than
/// the mean.
pub fn verdict(bottleneck: &Bottleneck, holdings: Option<&[Holding]>) -> String {
    let head = format!(
        "device {} does {}% more work than the mean",
        bottleneck.device,
        crate::units::format_number(100.0 * bottleneck.excess(), 1)
    );
    let Some(holdings) = holdings.filter(|h| !h.is_empty()) else { return head };
    let Some(h) = holdings.get(bottleneck.device as usize) else { return head };
    let mean = holdings.iter().map(|h| h.layers).sum::<f64>() / holdings.len() as f64;
    let layers = |v: f64| crate::units::format_number(v, 2);
    let mut why = Vec::new();
    if h.loss {
        why.push("the LM head".to_string());
    }
    if h.mtp > 1e-9 {
        let plural = if (h.mtp - 1.0).abs() < 1e-9 { "" } else { "s" };
        why.push(format!("{} MTP layer{plural} (each a layer and a pass through the LM head)", layers(h.mtp)));
    }
    if h.layers > mean * (1.0 + 1e-9) {
        why.push(format!("{} layers against a mean of {}", layers(h.layers), layers(mean)));
    }
    if why.is_empty() && h.embedding {
        why.push("the embedding".to_string());
    }
    if why.is_empty() {
        return head;
    }
    format!("{head}: {}", why.join(" and "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;

    fn placement(name: &str, devices: u32) -> Placement {
        let p = crate::ScheduleParams::new(devices, 2 * devices);
        crate::registry::generate(name, &p).unwrap().placement
    }

    #[test]
    fn holdings_add_up_to_the_model_and_place_the_head() {
        let m = Model::new(30, 1024, 16, 1024, 1, 32_000);
        for name in ["1f1b", "interleaved-1f1b", "zb-v", "chimera", "hanayo"] {
            let d = m.derive(4).unwrap();
            let placement = placement(name, 4);
            let h = d.holdings(&placement);
            let total: f64 = h.iter().map(|h| h.layers).sum();
            let pipelines = f64::from(placement.stages() / placement.stages_per_pipeline().max(1));
            assert!((total - 30.0 * pipelines).abs() < 1e-9, "{name}: {total}");
            let device_of_last = placement.device_of(placement.stages_per_pipeline() - 1).unwrap();
            assert!(h[device_of_last as usize].loss, "{name}");
            assert!(h[placement.device_of(0).unwrap() as usize].embedding, "{name}");
        }
        // 30 layers on 4 devices: the first two shares hold 8.
        let h = m.derive(4).unwrap().holdings(&placement("1f1b", 4));
        assert_eq!(h.iter().map(|h| h.layers).collect::<Vec<_>>(), vec![8.0, 8.0, 7.0, 7.0]);
    }

    #[test]
    fn a_proportional_cut_is_noted_only_where_no_whole_layer_cut_fits() {
        let even = Model::new(32, 1024, 16, 1024, 1, 32_000);
        // No layout: 32 layers cut whole into 8 stages for zb-v, and one per device for 1F1B.
        let d = even.derive(4).unwrap();
        assert_eq!(d.proportional_cut_note(placement("zb-v", 4).stages_per_pipeline()), None);
        assert_eq!(d.proportional_cut_note(placement("1f1b", 4).stages_per_pipeline()), None);
        // A layout of 4 stages: zb-v's 8 are cut in proportion, and the note says how to fix it.
        let given = Model { layout: Some("8,8,8,8".into()), ..even.clone() };
        let note = given.derive(4).unwrap().proportional_cut_note(placement("zb-v", 4).stages_per_pipeline()).unwrap();
        assert!(note.starts_with("8 stages on 4 devices") && note.contains("give a layout of 8 stages"), "{note}");
        // A layout of 8 stages places every layer.
        let eight = Model { layout: Some("Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4L".into()), ..even.clone() };
        assert_eq!(eight.derive(4).unwrap().proportional_cut_note(placement("zb-v", 4).stages_per_pipeline()), None);
        // 30 layers do not divide into 8 stages: cut in proportion.
        let odd = Model::new(30, 1024, 16, 1024, 1, 32_000).derive(4).unwrap();
        assert!(odd.proportional_cut_note(placement("zb-v", 4).stages_per_pipeline()).is_some());
        // A layout finer than the stages (16 pieces into 8): whole pieces merge, no note.
        let fine = Model { layout: Some("2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2".into()), ..even };
        assert_eq!(fine.derive(4).unwrap().proportional_cut_note(placement("zb-v", 4).stages_per_pipeline()), None);
    }

    #[test]
    fn the_verdict_names_the_lm_head_and_extra_layers() {
        let h = |layers: f64, loss: bool| Holding { layers, embedding: false, loss, mtp: 0.0 };
        let b = Bottleneck { device: 3, work: 1.23, mean: 1.0 };
        let holdings = [h(4.0, false), h(4.0, false), h(4.0, false), h(4.0, true)];
        assert_eq!(verdict(&b, Some(&holdings)), "device 3 does 23% more work than the mean: the LM head");
        let holdings = [h(4.0, false), h(4.0, false), h(4.0, false), h(5.0, true)];
        assert_eq!(
            verdict(&b, Some(&holdings)),
            "device 3 does 23% more work than the mean: the LM head and 5 layers against a mean of 4.25"
        );
        assert_eq!(verdict(&b, None), "device 3 does 23% more work than the mean");
    }

    /// MTP layers are counted where the layout puts them, and the verdict names them.
    #[test]
    fn holdings_count_mtp_layers_and_the_verdict_names_them() {
        let m = Model { layout: Some("Et*16|t*16m*3L".into()), ..Model::new(32, 1024, 16, 1024, 1, 32_000) };
        let d = m.derive(2).unwrap();
        let h = d.holdings(&placement("1f1b", 2));
        assert_eq!((h[0].mtp, h[1].mtp), (0.0, 3.0));
        let b = Bottleneck { device: 1, work: 1.5, mean: 1.0 };
        assert_eq!(
            verdict(&b, Some(&h)),
            "device 1 does 50% more work than the mean: the LM head and 3 MTP layers (each a layer and a pass through the LM head)"
        );
        // ZB-V's 4 stages on 2 devices cut the layout's 2 pieces in proportion, as its costs
        // are cut: the last piece's halves run on device 1 (stage 2) and device 0 (stage 3).
        let v = d.holdings(&placement("zb-v", 2));
        assert!((v[0].mtp - 1.5).abs() < 1e-9 && (v[1].mtp - 1.5).abs() < 1e-9, "{v:?}");
    }
}
