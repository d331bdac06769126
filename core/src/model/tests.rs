use super::*;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

#[test]
fn layer_flops_are_the_zero_bubble_papers_table_1_at_ffn_4h() {
    for (b, s, h) in [(1u32, 1024u32, 2304u32), (6, 1024, 2304), (2, 4096, 8192), (3, 128, 64)] {
        let m = Model::new(8, h, 16, s, b, 50_000);
        let (b, s, h) = (f64::from(b), f64::from(s), f64::from(h));
        let [f, bw, w] = m.layer_flops();
        assert!(rel(f, b * s * h * (24.0 * h + 4.0 * s)) < 1e-12);
        assert!(rel(bw, b * s * h * (24.0 * h + 8.0 * s)) < 1e-12);
        assert!(rel(w, 24.0 * b * s * h * h) < 1e-12);
        let [mf, mw] = m.layer_memory();
        assert!(rel(mf, b * s * h * (34.0 + 5.0 * 16.0 * s / h)) < 1e-12);
        assert!(rel(mw, 32.0 * b * s * h) < 1e-12);
        assert!(rel(m.layer_params(), 12.0 * h * h + 13.0 * h) < 1e-12);
    }
}

#[test]
fn a_wider_mlp_scales_only_the_mlp_terms() {
    let base = Model::new(8, 1024, 16, 2048, 1, 32_000);
    let wide = Model { ffn: Some(8192), ..base.clone() };
    let (bsh, h) = (1024.0 * 2048.0, 1024.0);
    // The MLP is 16H of the 24H; doubling FFN adds another 16H.
    assert!(rel(wide.layer_flops()[2] - base.layer_flops()[2], 16.0 * bsh * h) < 1e-12);
    assert!(rel(wide.layer_flops()[0] - base.layer_flops()[0], 16.0 * bsh * h) < 1e-12);
    assert!(rel(wide.layer_memory()[0] - base.layer_memory()[0], 16.0 * bsh) < 1e-12);
}

#[test]
fn the_last_share_carries_the_head_and_the_first_the_embedding() {
    let m = Model::new(8, 1024, 16, 1024, 2, 128_000);
    let d = m.derive(4).unwrap();
    let shares = d.shares();
    assert_eq!(shares.iter().map(|s| s.piece.layers).collect::<Vec<_>>(), [2, 2, 2, 2]);
    let (layer, head, embedding) = (d.layer.totals(), d.head.totals(), d.embedding.totals());
    for pass in 0..3 {
        let of = |s: &PieceCosts| [s.f, s.b, s.w][pass];
        assert!(rel(of(&shares[1]), 2.0 * layer[pass]) < 1e-12);
        assert!(rel(of(&shares[3]), 2.0 * layer[pass] + head[pass]) < 1e-12);
        assert!(rel(of(&shares[0]), 2.0 * layer[pass] + embedding[pass]) < 1e-12 || pass == 2);
    }
    assert_eq!(shares[0].w, shares[1].w, "the embedding has no weight-gradient matmul");
    assert!(shares[0].b > shares[1].b, "the embedding's table gradient");
    assert!(shares[0].mem_f > shares[1].mem_f && shares[3].mem_f > shares[0].mem_f);
    // One H100 node: every hop over NVLink at the switched-link share, plus the latency.
    let nvlink = 450e9 * super::hardware::SWITCHED_LINK_EFFICIENCY;
    assert!(rel(d.comm, 2.0 * 2.0 * 1024.0 * 1024.0 / nvlink * 1e6 + 5.0) < 1e-12);
    assert!(d.notes.is_empty());
}

#[test]
fn uneven_splits_are_noted_and_costed_per_share() {
    let d = Model { gpus_per_node: 16, ..Model::new(46, 1024, 16, 1024, 1, 32_000) }.derive(16).unwrap();
    assert_eq!(d.notes.len(), 1, "{:?}", d.notes);
    assert!(d.notes[0].contains("46 layers do not divide over 16 devices"), "{}", d.notes[0]);
    let shares = d.shares();
    assert!(shares[13].f > shares[14].f, "3 layers cost more than 2");
}

#[test]
fn a_derived_profile_runs_in_every_family_and_keeps_its_total_work() {
    let m = Model::new(16, 1024, 16, 1024, 1, 128_000);
    let d = m.derive(4).unwrap();
    let costs = d.costs();
    assert!(!costs.is_uniform());
    let total: f64 = d.shares().iter().map(|s| s.f + s.b + s.w).sum();
    for family in crate::FAMILIES {
        let params = crate::ScheduleParams::new(4, 8).with_costs(costs.clone());
        let Ok(analysis) = crate::run(family.name, &params) else { continue };
        let work: f64 = analysis.stats.per_device.iter().map(|s| s.work).sum();
        let pipelines = f64::from(analysis.schedule.placement.pipelines().max(1));
        assert!(rel(work, 8.0 * total) < 1e-9 || pipelines > 1.0, "{}: work {work} vs {}", family.name, 8.0 * total);
        assert!(analysis.stats.cost >= analysis.stats.ideal - 1e-9, "{}", family.name);
    }
}

#[test]
fn bad_models_name_the_setting() {
    let m = Model::new(8, 1024, 16, 1024, 1, 32_000);
    assert_eq!(Model { hidden: 0, ..m.clone() }.derive(4).unwrap_err().field, crate::Field::Hidden);
    assert_eq!(Model { tflops: Some(-1.0), ..m.clone() }.derive(4).unwrap_err().field, crate::Field::Tflops);
    assert_eq!(Model { layout: Some("Et|tL".into()), ..m.clone() }.derive(4).unwrap_err().field, crate::Field::Layout);
    assert!(m.derive(0).is_err());
}

#[test]
fn presets_derive() {
    for p in presets::model_presets() {
        let d = p.model.derive(p.devices).unwrap_or_else(|e| panic!("{}: {e}", p.key));
        assert_eq!(d.shares().len(), p.devices as usize);
    }
    // The 1B Llama's last share does far more work than the mean: the LM head.
    let p = presets::model_preset("llama-3.2-1b").unwrap();
    let shares = p.model.derive(p.devices).unwrap().shares();
    let mean = shares.iter().map(|s| s.f).sum::<f64>() / shares.len() as f64;
    assert!(shares[7].f > 1.9 * mean, "{} vs mean {mean}", shares[7].f);
}

#[test]
fn flash_attention_drops_the_score_matrices_and_recomputes_them_in_b() {
    let base = Model::new(8, 4096, 32, 8192, 2, 128_256);
    let flash = Model { flash_attention: true, ..base.clone() };
    let (b, s, h, a) = (2.0, 8192.0, 4096.0, 32.0);
    let [mf0, mw0] = base.layer_memory();
    let [mf1, mw1] = flash.layer_memory();
    assert!(rel(mf0 - mf1, 5.0 * a * s * s * b) < 1e-12, "the 5·A·S²·B score bytes go");
    assert_eq!(mw0, mw1);
    let [f0, b0, w0] = base.layer_flops();
    let [f1, b1, w1] = flash.layer_flops();
    assert_eq!((f0, w0), (f1, w1));
    assert!(rel(b1 - b0, 4.0 * b * s * s * h) < 1e-12, "B recomputes the forward's score FLOPs");
}

#[test]
fn tensor_parallelism_gives_each_gpu_a_t_th_of_the_stage() {
    // Independent of the code's helpers: the formulas of the module docs at t = 1 and t = 4.
    let base = Model { ffn: Some(14_336), flash_attention: true, ..Model::new(32, 4096, 32, 8192, 1, 128_256) };
    let tp = Model { tp: 4, ..base.clone() };
    let (b, s, h, v, ffn) = (1.0, 8192.0, 4096.0, 128_256.0, 14_336.0);
    let bsh = b * s * h;
    let weights = 8.0 * h + 4.0 * ffn;
    let expect_flops = [bsh * (weights + 4.0 * s), bsh * (weights + 12.0 * s), bsh * weights];
    for (got, want) in tp.layer_flops().iter().zip(expect_flops) {
        assert!(rel(*got, want / 4.0) < 1e-12, "{got} vs {want}/4");
    }
    let [mf, mw] = tp.layer_memory();
    assert!(rel(mf, bsh * (18.0 + 4.0 * ffn / h) / 4.0) < 1e-12);
    assert!(rel(mw, bsh * (16.0 + 4.0 * ffn / h) / 4.0) < 1e-12);
    assert!(rel(tp.head_flops(), 2.0 * bsh * v / 4.0) < 1e-12);
    let hop = |m: &Model| m.hops(4).unwrap().within - m.latency;
    assert!(rel(hop(&tp), hop(&base) / 4.0) < 1e-12, "a hop sends 2·B·S·H/t bytes");
    // Whole stages: every time, memory and parameter count is a quarter; the hop is not.
    let (d1, d4) = (base.derive(4).unwrap(), tp.derive(4).unwrap());
    // Beside the layers' TP collectives, timed in F and B (none in W).
    let tp_time = d4.layer.term(crate::model::Term::TpCollectives);
    assert!(tp_time[0] > 0.0 && tp_time[1] > 0.0 && tp_time[2] == 0.0, "{tp_time:?}");
    for (one, four) in d1.pieces.iter().zip(&d4.pieces) {
        let layers = f64::from(four.piece.layers);
        for (x, y) in [
            (one.f, four.f - layers * tp_time[0]),
            (one.b, four.b - layers * tp_time[1]),
            (one.w, four.w),
            (one.mem_f, four.mem_f),
            (one.mem_w, four.mem_w),
            (one.params, four.params),
        ] {
            assert!(rel(y, x / 4.0) < 1e-9, "{one:?} vs {four:?}");
        }
    }
}

#[test]
fn tensor_parallel_sizes_must_divide_heads_and_hidden() {
    let m = Model { tp: 3, ..Model::new(32, 4096, 32, 8192, 1, 128_256) };
    let e = m.derive(4).unwrap_err();
    assert_eq!(e.field, crate::error::Field::Tp);
    assert_eq!(e.message, "tp 3 does not divide heads 32: each GPU of a stage takes an equal part");
    assert!(e.hints.iter().any(|h| h.contains("64, 32, 16, 8") || h.contains("32, 16, 8, 4")), "{:?}", e.hints);
    assert!(Model { tp: 2048, ..m.clone() }.derive(4).is_err(), "tp above 1024 is refused");
    assert!(Model { tp: 8, ..m }.derive(4).is_ok());
}

/// The Megatron layout of `layers` over `stages` stages as evenly as possible (the first
/// `layers % stages` stages one more), the embedding first and the LM head last: written out
/// here as a user would, independently of [`Layout::even`].
fn megatron_even(layers: u32, stages: u32) -> String {
    (0..stages)
        .map(|k| {
            let n = layers / stages + u32::from(k < layers % stages);
            let e = if k == 0 { "E" } else { "" };
            let l = if k == stages - 1 { "L" } else { "" };
            format!("{e}{}{l}", "t".repeat(n as usize))
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// Families that cut more stages than devices run the model cut at whole layers into those
/// stages (the embedding on the first, the LM head on the last, wherever the placement puts
/// them): exactly what the same model with that layout written out costs, never fractions
/// of a layer, for interleaved, V-shaped and wave placements.
#[test]
fn chunked_families_cut_the_model_at_whole_layers_like_a_written_layout() {
    let mut checked = 0;
    for (model, devices) in
        [(Model::new(16, 2048, 32, 2048, 1, 128_256), 4), (Model::new(24, 1024, 16, 1024, 1, 50_000), 4)]
    {
        for (family, chunks) in [
            ("interleaved-1f1b", Some(2)),
            ("interleaved-1f1b", Some(3)),
            ("zb-v", None),
            ("v-half", None),
            ("hanayo", None),
            ("1f1b", None),
        ] {
            let mut params = crate::ScheduleParams::new(devices, 8).with_costs(model.derive(devices).unwrap().costs());
            params.chunks = chunks;
            let Ok(derived) = crate::run(family, &params) else { continue };
            let stages = derived.schedule.placement.stages_per_pipeline();
            if model.layers % stages != 0 {
                // An uneven cut stays proportional (see `Derived::finer`).
                continue;
            }
            let written = Model { layout: Some(megatron_even(model.layers, stages)), ..model.clone() };
            let mut exact = params.clone();
            exact.costs = written.derive(devices).unwrap().costs();
            let by_layout = crate::run(family, &exact).unwrap();
            assert_eq!(derived.stats.cost, by_layout.stats.cost, "{family} {chunks:?}: {stages} stages");
            assert_eq!(derived.stats.peak_memory, by_layout.stats.peak_memory, "{family} {chunks:?}");
            // What each device holds: whole layers, the LM head where the last stage runs.
            let holdings = model.derive(devices).unwrap().holdings(&derived.schedule.placement);
            assert!(holdings.iter().all(|h| h.layers.fract() == 0.0), "{family} {chunks:?}: {holdings:?}");
            let last = derived.schedule.placement.device_of(stages - 1).unwrap() as usize;
            let heads: Vec<usize> = (0..holdings.len()).filter(|&d| holdings[d].loss).collect();
            assert_eq!(heads, vec![last], "{family} {chunks:?}: {holdings:?}");
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} runs");
    // Where the layers do not divide into the stages the cut stays proportional, and zb-v
    // runs (an uneven whole-layer cut is one its heuristic cannot schedule): the Zero Bubble
    // paper's 1.5B model on its own 8 devices and 24 microbatches.
    let p = crate::model::presets::model_preset("zb-1.5b").unwrap();
    let params = crate::ScheduleParams::new(8, 24).with_costs(p.model.derive(8).unwrap().costs());
    assert!(crate::run("zb-v", &params).is_ok());
}

#[test]
fn grouped_query_attention_shrinks_k_and_v_by_g_over_a() {
    // Independent of the code's helpers: the module docs' formulas at g = 8 of A = 64.
    let mha = Model { ffn: Some(43_008), flash_attention: true, ..Model::new(80, 8192, 64, 8192, 1, 128_256) };
    let gqa = Model { kv_heads: Some(8), ..mha.clone() };
    let (b, s, h, ffn, r) = (1.0, 8192.0, 8192.0, 43_008.0, 8.0 / 64.0);
    let bsh = b * s * h;
    let weights = (4.0 + 4.0 * r) * h + 4.0 * ffn;
    let expect = [bsh * (weights + 4.0 * s), bsh * (weights + 12.0 * s), bsh * weights];
    for (got, want) in gqa.layer_flops().iter().zip(expect) {
        assert!(rel(*got, want) < 1e-12, "{got} vs {want}");
    }
    // K and V: 4 of attention's 11 bytes, scaled by g/A, in both mem-f and mem-w.
    let ([f0, w0], [f1, w1]) = (mha.layer_memory(), gqa.layer_memory());
    assert!(rel(f0 - f1, 4.0 * (1.0 - r) * bsh) < 1e-12 && rel(w0 - w1, 4.0 * (1.0 - r) * bsh) < 1e-12);
    assert!(rel(f1 - w1, 2.0 * bsh) < 1e-12, "B frees the same 2 bytes as without GQA");
    // At g = A nothing changes.
    let same = Model { kv_heads: Some(64), ..mha.clone() };
    assert_eq!(
        (same.layer_flops(), same.layer_memory(), same.layer_params()),
        (mha.layer_flops(), mha.layer_memory(), mha.layer_params())
    );
}

#[test]
fn llama_presets_have_their_published_parameter_counts() {
    // Meta's model cards: Llama 3 8B has 8.03 B parameters, 70B 70.55 B (untied embedding
    // and LM head). Counting K and V as full projections would say 8.8 B and 79.9 B.
    for (key, published) in [("llama-3-8b", 8.03e9), ("llama-3-70b", 70.55e9)] {
        let p = crate::model::presets::model_preset(key).unwrap();
        let d = p.model.derive(p.devices).unwrap();
        let total: f64 = d.pieces.iter().map(|x| x.params).sum();
        assert!(rel(total, published) < 0.005, "{key}: {total} vs {published}");
    }
}

#[test]
fn kv_heads_must_divide_heads_and_be_divisible_by_tp() {
    let m = Model { kv_heads: Some(6), ..Model::new(32, 4096, 32, 8192, 1, 128_256) };
    let e = m.derive(4).unwrap_err();
    assert_eq!(e.field, crate::error::Field::KvHeads);
    assert!(e.message.starts_with("kv-heads 6 does not divide heads 32"), "{e}");
    assert!(e.hints.iter().any(|h| h.contains("8")), "{:?}", e.hints);
    let e = Model { kv_heads: Some(64), ..m.clone() }.derive(4).unwrap_err();
    assert_eq!(e.field, crate::error::Field::KvHeads, "more key/value heads than heads");
    let e = Model { kv_heads: Some(4), tp: 8, ..m.clone() }.derive(4).unwrap_err();
    assert_eq!(e.field, crate::error::Field::Tp);
    assert!(e.message.contains("tp 8 does not divide kv-heads 4"), "{e}");
    assert!(Model { kv_heads: Some(8), tp: 8, ..m }.derive(4).is_ok());
}

#[test]
fn an_mtp_layer_is_a_layer_plus_its_projection_embedding_and_head_pass() {
    // Independent of the code's helpers: the formulas of `Model::mtp_extra`'s docs, on the
    // last share of a 2-device Llama 3 8B with and without one MTP layer.
    let plain = Model {
        layout: Some("Et*16|t*16L".into()),
        ..crate::model::presets::model_preset("llama-3-8b").unwrap().model
    };
    let mtp = Model { layout: Some("Et*16|t*16mL".into()), ..plain.clone() };
    let (a, b) = (plain.derive(2).unwrap(), mtp.derive(2).unwrap());
    assert_eq!(a.pieces[0], b.pieces[0], "the first share is untouched");
    let (x, y) = (&a.pieces[1], &b.pieces[1]);
    let (bs, h, v) = (8192.0, 4096.0, 128_256.0);
    let bsh = bs * h;
    let layer = a.layer.totals();
    let rates = plain.rates(plain.efficiency().unwrap()).unwrap();
    let extra = Breakdown::of(&plain.mtp_ops(), &rates).totals();
    for (pass, (got, base)) in [(y.f, x.f), (y.b, x.b), (y.w, x.w)].into_iter().enumerate() {
        assert!(rel(got - base, layer[pass] + extra[pass]) < 1e-9, "{got} - {base}");
    }
    // Its extra matmuls: the projection's 4·B·S·H² and the head's 2·B·S·H·V FLOPs per pass.
    for flops in roofline::flops(&plain.mtp_ops()) {
        assert!(rel(flops, 4.0 * bsh * h + 2.0 * bsh * v) < 1e-12, "{flops}");
    }
    let [lmf, lmw] = plain.layer_memory();
    // F keeps the head's logits (fp32) and input, the projection's 2H-wide input and the
    // embedding lookup; W needs the head's input and the projection's.
    let head_f = 2.0 * bsh + 4.0 * bs * v;
    assert!(rel(y.mem_f - x.mem_f, lmf + head_f + 5.0 * bsh) < 1e-9);
    assert!(rel(y.mem_w - x.mem_w, lmw + 2.0 * bsh + 4.0 * bsh) < 1e-9);
    // It embeds the shifted tokens itself: the last stage gains a copy of the embedding.
    assert!(rel(y.params - x.params, plain.layer_params() + 2.0 * h * h + 2.0 * h + v * h) < 1e-9);
    assert_eq!((y.piece.layers, y.piece.mtp), (16, 1));
    // DeepSeek-V3's shape, MTP on a stage of its own before the loss: that stage builds its
    // own embedding and output layer (Megatron-Core), 2·V·H more parameters than its layers.
    let apart = Model { layout: Some("Et*16|t*16|m|L".into()), ..plain.clone() }.derive(4).unwrap();
    let own = &apart.pieces[2];
    assert_eq!((own.piece.layers, own.piece.mtp, own.piece.embedding, own.piece.loss), (0, 1, false, false));
    assert!(rel(own.params, plain.layer_params() + 2.0 * h * h + 2.0 * h + 2.0 * v * h) < 1e-9, "{}", own.params);
}

#[test]
fn divisor_hints_list_every_common_divisor_that_fits() {
    use super::divisors_hint;
    assert_eq!(divisors_hint(&[40], 1), "40, 20, 10, 8");
    assert_eq!(divisors_hint(&[7], 1), "7, 1");
    assert_eq!(divisors_hint(&[64], 8), "64, 32, 16, 8");
    assert_eq!(divisors_hint(&[8, 64, 4096], 1), "8, 4, 2, 1");
    assert_eq!(divisors_hint(&[6], 4), "none: change tp first");
    // The hints name values that pass the checks they are about.
    let m = crate::model::presets::model_preset("llama-3-8b").unwrap().model;
    let e = Model { kv_heads: Some(6), tp: 8, ..m.clone() }.derive(4).unwrap_err().to_string();
    assert!(e.contains("divisors of heads that tp divides, e.g. 32, 16, 8 ("), "{e}");
    for kv in [32, 16, 8] {
        assert!(Model { kv_heads: Some(kv), tp: 8, ..m.clone() }.derive(4).is_ok(), "kv-heads {kv}");
    }
    let e = Model { tp: 3, ..m.clone() }.derive(4).unwrap_err().to_string();
    assert!(e.contains("e.g. 8, 4, 2, 1"), "{e}");
}
