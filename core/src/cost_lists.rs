//! Hand-set costs as the user writes them: `--f 4,4,4,6` in the CLI, `f=4,4,4,6` in a
//! permalink. Each of F, B, W, mem-f and mem-w is one number or one per device share, in
//! pipeline order; this module turns them into [`Costs`] (a [`CostProfile`] when shares
//! differ) in one place for every edge.

use crate::error::{Field, ParamError};
use crate::params::{CostProfile, Costs};
use crate::units::short_number;

/// The fields that take a list.
pub const LIST_FIELDS: [Field; 5] = [Field::F, Field::B, Field::W, Field::MemF, Field::MemW];

/// The longest list read (a list is one number per device).
const MAX_ITEMS: usize = crate::params::MAX_DEVICES as usize;

/// Per-share cost lists; `None` leaves a cost at its base value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostLists {
    /// Forward time per share.
    pub f: Option<Vec<f64>>,
    /// Input-gradient time per share.
    pub b: Option<Vec<f64>>,
    /// Weight-gradient time per share.
    pub w: Option<Vec<f64>>,
    /// Activation memory per share.
    pub mem_f: Option<Vec<f64>>,
    /// Memory W still needs after B, per share.
    pub mem_w: Option<Vec<f64>>,
}

/// Reads `4` or `4,4.5,5,6` for `field`: every item a number (range checks come later, with
/// the costs).
///
/// # Errors
/// A [`ParamError`] on `field` naming the empty or unreadable item.
pub fn parse_list(text: &str, field: Field) -> Result<Vec<f64>, ParamError> {
    let hint = || "give one number, or one per device in pipeline order, e.g. 4,4,4,6".to_string();
    let mut out = Vec::new();
    for (i, item) in text.split(',').enumerate() {
        if i >= MAX_ITEMS {
            return Err(ParamError::new(field, format!("{} lists more than {MAX_ITEMS} numbers", field.name()))
                .hint("give one number per device"));
        }
        let item = item.trim();
        if item.is_empty() {
            return Err(ParamError::new(
                field,
                format!("item {} of the {} list is empty, expected a number", i + 1, field.name()),
            )
            .hint(hint()));
        }
        let v: f64 = item.parse().map_err(|_| {
            let shown: String = crate::units::clean_text(item).chars().take(24).collect();
            ParamError::new(field, format!("`{shown}` in the {} list is not a number", field.name())).hint(hint())
        })?;
        out.push(v);
    }
    Ok(out)
}

impl CostLists {
    /// The list of `field`, if set.
    pub fn get(&self, field: Field) -> Option<&Vec<f64>> {
        match field {
            Field::F => self.f.as_ref(),
            Field::B => self.b.as_ref(),
            Field::W => self.w.as_ref(),
            Field::MemF => self.mem_f.as_ref(),
            Field::MemW => self.mem_w.as_ref(),
            _ => None,
        }
    }

    /// Sets the list of `field` (other fields are ignored).
    pub fn set(&mut self, field: Field, values: Option<Vec<f64>>) {
        match field {
            Field::F => self.f = values,
            Field::B => self.b = values,
            Field::W => self.w = values,
            Field::MemF => self.mem_f = values,
            Field::MemW => self.mem_w = values,
            _ => {}
        }
    }

    /// Whether any list has more than one number.
    pub fn has_lists(&self) -> bool {
        LIST_FIELDS.iter().any(|f| self.get(*f).is_some_and(|v| v.len() > 1))
    }

    /// `base` with these lists over it on `devices` devices: single numbers replace the
    /// scalar, lists of `devices` numbers make a [`CostProfile`] (a uniform one collapses to
    /// the scalar, so `4,4,4,4` gives exactly what `4` gives). mem-w defaults to half of each
    /// share's mem-f when lists are given and no mem-w is.
    ///
    /// # Errors
    /// A [`ParamError`] naming the list whose length is not 1 or `devices`, or that holds a
    /// negative or non-finite number.
    pub fn apply(&self, base: &Costs, devices: u32) -> Result<Costs, ParamError> {
        let mut scalars = base.clone();
        for field in LIST_FIELDS {
            let Some(values) = self.get(field) else { continue };
            if values.is_empty() || (values.len() > 1 && values.len() != devices as usize) {
                return Err(ParamError::new(
                    field,
                    format!(
                        "{} lists {} numbers, expected {devices} (one per device) or a single number",
                        field.name(),
                        values.len()
                    ),
                )
                .hint(format!(
                    "give {devices} numbers, each device's share of the model in pipeline order{}",
                    if devices <= 8 {
                        format!(", e.g. {}", vec!["1"; devices.max(1) as usize].join(","))
                    } else {
                        String::new()
                    }
                )));
            }
            // A single number is checked with the costs, by the same rule as any scalar.
            for &v in values.iter().filter(|_| values.len() > 1) {
                if v < 0.0 || !v.is_finite() {
                    return Err(ParamError::new(
                        field,
                        format!("{} must list finite, non-negative numbers, found {}", field.name(), short_number(v)),
                    )
                    .hint("give each device's share of the model in pipeline order, e.g. 4,4,4,6"));
                }
            }
            let first = values[0];
            match field {
                Field::F => scalars.f = first,
                Field::B => scalars.b = first,
                Field::W => scalars.w = first,
                Field::MemF => scalars.mem_f = first,
                _ => scalars.mem_w = Some(first),
            }
        }
        // A file's or a model's per-piece costs stay, as one piece per device, under what is
        // given: a single number replaces that cost on every device, a list replaces its list.
        let base_profile = base.profile.as_deref().map(|p| p.per_device(devices as usize));
        if base_profile.is_none() && !self.has_lists() {
            return Ok(scalars);
        }
        if LIST_FIELDS.iter().all(|f| self.get(*f).is_none()) {
            return Ok(base.clone());
        }
        let mut p = match base_profile {
            Some(p) => p,
            None => CostProfile::uniform(&Costs { profile: None, ..scalars.clone() }, devices as usize),
        };
        let fill = |target: &mut Vec<f64>, list: Option<&Vec<f64>>| {
            if let Some(v) = list {
                *target = if v.len() == 1 { vec![v[0]; devices as usize] } else { v.clone() };
            }
        };
        fill(&mut p.f, self.f.as_ref());
        fill(&mut p.b, self.b.as_ref());
        fill(&mut p.w, self.w.as_ref());
        fill(&mut p.mem_f, self.mem_f.as_ref());
        if self.mem_w.is_some() {
            fill(&mut p.mem_w, self.mem_w.as_ref());
        } else if base.mem_w.is_none() && base.profile.is_none() {
            p.mem_w = p.mem_f.iter().map(|m| m / 2.0).collect();
        }
        // The model's finer cuts describe the costs before these edits: they go.
        p.finer.clear();
        Ok(Costs { profile: None, ..scalars }.with_profile(p, devices))
    }

    /// The per-device lists of `costs`' profile (empty without one): one number per device
    /// share, which [`CostLists::apply`] on `costs`' scalars turns back into the same costs
    /// when the profile has one piece per device and no finer cuts ([`CostLists::exact`]).
    /// A profile of more pieces (a model's layers, read from a file) gives each share's sum:
    /// the same stages for every family with one stage per device, where chunked families
    /// cut the shares in proportion rather than at the file's pieces.
    pub fn of(costs: &Costs, devices: u32) -> CostLists {
        let mut lists = CostLists::default();
        let Some(profile) = &costs.profile else { return lists };
        let shares = profile.per_device(devices as usize);
        for (field, values) in shares.lists() {
            lists.set(field, Some(values.to_vec()));
        }
        lists
    }

    /// Whether [`CostLists::of`] says all of `costs` on `devices` devices: no profile, or one
    /// piece per device and no finer cuts. Links and CLI lines write the lists, so where this
    /// is false they give chunked families other stage costs than the profile does.
    pub fn exact(costs: &Costs, devices: u32) -> bool {
        costs.profile.as_ref().is_none_or(|p| p.pieces() == devices as usize && p.finer.is_empty())
    }
}

/// The hand-set cost flags that give `costs` on `devices` devices, as a CLI line writes them
/// (`--f 1,1,1,2 --comm 0.2`): lists where shares differ, a number where it is not the
/// default, `--overlap` only when `overlap` (the family reads it). Empty for the defaults.
pub fn cost_flags(costs: &Costs, devices: u32, overlap: bool) -> String {
    let d = Costs::default();
    let lists = CostLists::of(costs, devices);
    let nums = [
        (Field::F, Some(costs.f), Some(d.f)),
        (Field::B, Some(costs.b), Some(d.b)),
        (Field::W, Some(costs.w), Some(d.w)),
        (Field::Comm, Some(costs.comm), Some(d.comm)),
        (Field::Overlap, costs.overlap.filter(|_| overlap), None),
        (Field::MemF, Some(costs.mem_f), Some(d.mem_f)),
        (Field::MemW, costs.mem_w, None),
    ];
    let mut out = Vec::new();
    for (field, value, default) in nums {
        if let Some(list) = lists.get(field) {
            out.push(format!("--{} {}", field.name(), format_list(list)));
        } else if let Some(v) = value.filter(|v| Some(*v) != default) {
            out.push(format!("--{} {v}", field.name()));
        }
    }
    out.join(" ")
}

/// A list as text: `4,4,4,6`, or one number when all are equal.
pub fn format_list(values: &[f64]) -> String {
    match values.first() {
        Some(first) if values.iter().all(|v| v == first) => first.to_string(),
        _ => values.iter().map(f64::to_string).collect::<Vec<_>>().join(","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_costs_go_over_a_files_profile_not_under_it() {
        // A file's costs: per-device F and mem-f lists.
        let lists = |f: &str, mem_f: &str| CostLists {
            f: Some(parse_list(f, Field::F).unwrap()),
            mem_f: Some(parse_list(mem_f, Field::MemF).unwrap()),
            ..CostLists::default()
        };
        let file = lists("1,3", "2,1").apply(&Costs::default(), 2).unwrap();
        let profile = |c: &Costs| c.profile.as_deref().cloned().unwrap();
        // A single number replaces F on every device; the file's mem-f list stays.
        let one = CostLists { f: Some(vec![5.0]), ..CostLists::default() }.apply(&file, 2).unwrap();
        assert_eq!((profile(&one).f, profile(&one).mem_f), (vec![5.0, 5.0], vec![2.0, 1.0]));
        assert_eq!(one.f, 5.0);
        // A list replaces its own list only.
        let list = CostLists { f: Some(vec![5.0, 6.0]), ..CostLists::default() }.apply(&file, 2).unwrap();
        assert_eq!((profile(&list).f, profile(&list).mem_f), (vec![5.0, 6.0], vec![2.0, 1.0]));
        // Nothing given: the file's costs, untouched.
        assert_eq!(CostLists::default().apply(&file, 2).unwrap(), file);
        // A model's pieces (more than the devices) are kept as each device's share.
        let model = crate::model::ModelSpec::preset("llama-3.2-1b").resolve().unwrap().derive(4).unwrap().costs();
        let over = CostLists { w: Some(vec![1.0]), ..CostLists::default() }.apply(&model, 4).unwrap();
        let shares = model.profile.as_deref().unwrap().per_device(4);
        assert_eq!((profile(&over).f, profile(&over).w), (shares.f, vec![1.0; 4]));
        // Its whole-layer cuts for chunked families describe the costs before the edit: gone,
        // so a two-chunk schedule runs at the edited times (W at 1 on every share).
        assert!(!profile(&model).finer.is_empty() && profile(&over).finer.is_empty());
        let zbv = |c: &Costs| crate::run("zb-v", &crate::ScheduleParams::new(4, 8).with_costs(c.clone())).unwrap();
        let table = crate::StageCosts::for_schedule(&over, &zbv(&over).schedule);
        assert!(table.w.iter().all(|&w| (w - 0.5).abs() < 1e-12), "{:?}", table.w);
    }

    #[test]
    fn equal_lists_give_the_scalar_and_unequal_ones_a_profile() {
        let base = Costs::default();
        let one = CostLists { f: Some(vec![2.0]), ..CostLists::default() }.apply(&base, 4).unwrap();
        let same = CostLists { f: Some(vec![2.0; 4]), ..CostLists::default() }.apply(&base, 4).unwrap();
        assert_eq!(one.f, 2.0);
        assert_eq!(same.profile, None);
        assert_eq!((same.f, same.b, same.mem_f), (one.f, one.b, one.mem_f));
        let uneven = CostLists { f: Some(vec![1.0, 1.0, 1.0, 3.0]), ..CostLists::default() }.apply(&base, 4).unwrap();
        let p = uneven.profile.as_ref().unwrap();
        assert_eq!(p.f, vec![1.0, 1.0, 1.0, 3.0]);
        assert_eq!(p.mem_w, vec![0.5; 4]);
        assert_eq!(uneven.f, 1.5);
    }

    #[test]
    fn lists_round_trip_through_of() {
        let base = Costs { comm: 0.25, ..Costs::default() };
        let lists =
            CostLists { f: Some(vec![1.0, 2.0, 3.0]), mem_f: Some(vec![4.0, 4.0, 8.0]), ..CostLists::default() };
        let costs = lists.apply(&base, 3).unwrap();
        let back = CostLists::of(&costs, 3).apply(&Costs { profile: None, ..costs.clone() }, 3).unwrap();
        assert_eq!(back, costs);
    }

    #[test]
    fn bad_lists_name_the_field_and_the_count() {
        let e =
            CostLists { b: Some(vec![1.0, 2.0, 3.0]), ..CostLists::default() }.apply(&Costs::default(), 4).unwrap_err();
        assert_eq!(e.field, Field::B);
        assert!(e.to_string().contains("b lists 3 numbers, expected 4"), "{e}");
        let e = CostLists { w: Some(vec![1.0, -2.0]), ..CostLists::default() }.apply(&Costs::default(), 2).unwrap_err();
        assert!(e.to_string().contains("non-negative"), "{e}");
        assert!(parse_list("1,,2", Field::F).unwrap_err().to_string().contains("item 2"));
        assert!(parse_list("1,x", Field::F).unwrap_err().to_string().contains("`x`"));
        assert_eq!(parse_list(" 1, 2.5 ", Field::F).unwrap(), vec![1.0, 2.5]);
    }

    #[test]
    fn format_list_writes_one_number_for_equal_values() {
        assert_eq!(format_list(&[2.0, 2.0]), "2");
        assert_eq!(format_list(&[1.0, 2.5]), "1,2.5");
    }
}
