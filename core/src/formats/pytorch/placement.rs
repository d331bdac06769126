//! Which rank runs which stage: the placement a file's cells imply.

use std::collections::BTreeSet;

use crate::schedule::{Op, Pass, Placement};

use super::super::text::{Diagnostics, Source};
use super::cell_error;

/// The stage-to-device table the cells imply, as a placement. A stage on two rows is an error
/// and its cells on the later rows are dropped.
pub(super) fn infer_placement(
    ops: &mut Vec<(u32, usize, Op)>,
    devices: u32,
    source: &Source,
    name: &dyn Fn(Pass) -> String,
    out: &mut Diagnostics,
) -> Option<Placement> {
    let stages = ops.iter().flat_map(|(_, _, op)| op.passes()).map(|p| p.stage).max().map_or(0, |s| s + 1);
    let passes = ops.iter().map(|(_, _, op)| op.passes().count()).sum::<usize>();
    if stages as usize > passes {
        // Bound the table: a valid file has at least one action per stage.
        let (row, column, op) = ops.iter().max_by_key(|(_, _, op)| op.passes().map(|p| p.stage).max()).copied()?;
        out.push(cell_error(
            source,
            (row, column),
            format!(
                "`{}` names stage {}, but the file has only {passes} actions, so most stages would have none",
                name(op.first()),
                stages - 1
            ),
            "check this cell's stage number",
        ));
        return None;
    }
    // The first (row, column) each stage appears at.
    let mut home: Vec<Option<(u32, usize)>> = vec![None; stages as usize];
    for (row, column, op) in ops.iter() {
        for p in op.passes() {
            home[p.stage as usize].get_or_insert((*row, *column));
        }
    }
    let mut reported: BTreeSet<(u32, u32)> = BTreeSet::new();
    ops.retain_mut(|(row, column, op)| {
        let foreign = |p: &Pass| home[p.stage as usize].is_some_and(|(r, _)| r != *row);
        for p in op.passes().filter(foreign) {
            if reported.insert((p.stage, *row)) {
                let (first_row, first_column) = home[p.stage as usize].unwrap_or((0, 0));
                let error = cell_error(
                    source,
                    (*row, *column),
                    format!(
                        "`{}` puts stage {} on row {row}, but it runs on row {first_row} (first at {})",
                        name(p),
                        p.stage,
                        source.short(first_row, first_column)
                    ),
                    "a stage runs on one rank: PyTorch infers the stage-to-rank map from the rows",
                );
                out.push(error.hint(format!("the actions of stage {} on row {row} are skipped", p.stage)));
            }
        }
        let kept: Vec<Pass> = op.passes().filter(|p| !foreign(p)).collect();
        match (*op, kept.as_slice()) {
            (Op::Pair(..), [_, _]) => true,
            (_, [p]) => {
                *op = Op::One(*p);
                true
            }
            _ => false,
        }
    });
    // A stage with no action keeps a device (0) so the table is whole; the check reports it.
    let table: Vec<u32> = home.iter().map(|h| h.map_or(0, |(row, _)| row)).collect();
    Some(detect_placement(devices, table))
}

/// The known placement equal to `table`, or a custom one.
pub(super) fn detect_placement(devices: u32, table: Vec<u32>) -> Placement {
    let stages = table.len() as u32;
    if devices > 0 && stages > 0 {
        let mut candidates = Vec::new();
        if stages == devices {
            candidates.push(Placement::linear(devices));
        }
        if stages % devices == 0 && stages / devices >= 2 {
            candidates.push(Placement::interleaved(devices, stages / devices));
        }
        if stages == 2 * devices {
            candidates.push(Placement::v_shape(devices));
        }
        if stages % (2 * devices) == 0 && stages / (2 * devices) >= 2 {
            candidates.push(Placement::wave(devices, stages / (2 * devices)));
        }
        if let Some(known) = candidates.into_iter().find(|p| p.stage_devices() == table.as_slice()) {
            return known;
        }
    }
    Placement::custom(devices, table)
}
