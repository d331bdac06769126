//! Closed forms as formulas a reader can take apart: named terms over the schedule's symbols
//! (P, M, F, B, W, comm, V, …), each saying which passes it stands for, rendered as text and
//! MathML, with the source that states it and the assumptions it needs, each checked against
//! the settings. A family builds its [`Explanation`] in its own file; its `predict` reads the
//! numbers from it ([`Explanation::prediction`], in `family.rs`). Uses params, schedule and
//! stats only.

use std::fmt::Write as _;
use std::ops::{Add, Div, Mul, Sub};

use crate::params::ScheduleParams;
use crate::schedule::Pass;

/// Which simulated quantity a closed-form bubble predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BubbleQuantity {
    /// `cost − ideal`: the Zero Bubble papers' bubble (longest device span minus M·(F+B+W)).
    CostMinusIdeal,
    /// `makespan − busy` of the least busy device: DeepSeek's bubble for DualPipe, where
    /// overlapped F&B pairs make devices differ in busy time.
    LeastBusyIdle,
}

impl BubbleQuantity {
    /// The simulated value of this quantity, without float noise ([`crate::units::difference`]).
    pub fn of(self, stats: &crate::stats::Stats) -> f64 {
        match self {
            BubbleQuantity::CostMinusIdeal => crate::units::difference(stats.cost, stats.ideal),
            BubbleQuantity::LeastBusyIdle => {
                let least = stats.per_device.iter().map(|d| d.busy).fold(f64::INFINITY, f64::min);
                if least.is_finite() {
                    crate::units::difference(stats.makespan, least)
                } else {
                    0.0
                }
            }
        }
    }

    /// What it measures, for labels.
    pub fn label(self) -> &'static str {
        match self {
            BubbleQuantity::CostMinusIdeal => "cost − ideal",
            BubbleQuantity::LeastBusyIdle => "makespan − busy of the least busy device",
        }
    }
}

/// A quantity a formula is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sym {
    /// Devices.
    P,
    /// Microbatches.
    M,
    /// Forward time.
    F,
    /// Input-gradient backward time.
    B,
    /// Weight-gradient backward time.
    W,
    /// One hop's communication time.
    Comm,
    /// Chunks per device.
    V,
    /// Microbatches per chunk round (interleaved 1F1B).
    G,
    /// Sequence splits (Seq1F1B).
    K,
    /// Hanayo's waves.
    Waves,
    /// An overlapped F&B pair's time.
    Overlap,
    /// One forward's activation memory.
    MemF,
    /// What a B leaves for its W.
    MemW,
    /// The device a per-device formula is about (0-based).
    D,
}

impl Sym {
    /// The symbol as text.
    pub fn text(self) -> &'static str {
        match self {
            Sym::P => "P",
            Sym::M => "M",
            Sym::F => "F",
            Sym::B => "B",
            Sym::W => "W",
            Sym::Comm => "comm",
            Sym::V => "V",
            Sym::G => "G",
            Sym::K => "K",
            Sym::Waves => "waves",
            Sym::Overlap => "F&B",
            Sym::MemF => "mem-f",
            Sym::MemW => "mem-w",
            Sym::D => "d",
        }
    }

    /// The symbol as MathML.
    fn mathml(self) -> String {
        match self {
            Sym::MemF => "<msub><mi>M</mi><mi>f</mi></msub>".to_string(),
            Sym::MemW => "<msub><mi>M</mi><mi>w</mi></msub>".to_string(),
            Sym::Overlap => "<msub><mi>T</mi><mi>F&amp;B</mi></msub>".to_string(),
            other => format!("<mi>{}</mi>", other.text()),
        }
    }
}

/// The values of the symbols for one setting (and one device, for per-device formulas).
#[derive(Clone, Debug, PartialEq)]
pub struct Vars {
    values: [(Sym, f64); 14],
}

impl Vars {
    /// The symbols' values for `params`, whose options are already defaulted (see
    /// [`super::Family::with_defaults`]); device 0.
    pub fn of(params: &ScheduleParams) -> Vars {
        let c = &params.costs;
        let count = |v: Option<u32>| f64::from(v.unwrap_or(1));
        Vars {
            values: [
                (Sym::P, f64::from(params.devices)),
                (Sym::M, f64::from(params.microbatches)),
                (Sym::F, c.f),
                (Sym::B, c.b),
                (Sym::W, c.w),
                (Sym::Comm, c.comm),
                (Sym::V, count(params.chunks)),
                (Sym::G, f64::from(params.group.unwrap_or(params.devices))),
                (Sym::K, count(params.seq_splits)),
                (Sym::Waves, count(params.waves)),
                (Sym::Overlap, c.overlap.unwrap_or(c.f + c.b + c.w)),
                (Sym::MemF, c.mem_f),
                (Sym::MemW, c.mem_w()),
                (Sym::D, 0.0),
            ],
        }
    }

    /// The same values for device `d`.
    pub fn at_device(&self, d: u32) -> Vars {
        let mut v = self.clone();
        v.set(Sym::D, f64::from(d));
        v
    }

    /// The value of `sym`.
    pub fn get(&self, sym: Sym) -> f64 {
        self.values.iter().find(|(s, _)| *s == sym).map_or(0.0, |(_, v)| *v)
    }

    /// Sets `sym` to `value`.
    pub fn set(&mut self, sym: Sym, value: f64) {
        if let Some(slot) = self.values.iter_mut().find(|(s, _)| *s == sym) {
            slot.1 = value;
        }
    }
}

/// A symbolic expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A symbol.
    Sym(Sym),
    /// A whole number.
    Int(i64),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a − b`.
    Sub(Box<Expr>, Box<Expr>),
    /// `a · b`.
    Mul(Box<Expr>, Box<Expr>),
    /// `a / b`.
    Div(Box<Expr>, Box<Expr>),
    /// `⌊a / b⌋`.
    FloorDiv(Box<Expr>, Box<Expr>),
    /// `min(a, b)`.
    Min(Box<Expr>, Box<Expr>),
    /// `max(a, b)`.
    Max(Box<Expr>, Box<Expr>),
    /// `|a|`.
    Abs(Box<Expr>),
}

/// The expression of `sym`.
pub fn sym(s: Sym) -> Expr {
    Expr::Sym(s)
}

/// The expression of the whole number `n`.
pub fn int(n: i64) -> Expr {
    Expr::Int(n)
}

/// `min(a, b)`.
pub fn min(a: Expr, b: Expr) -> Expr {
    Expr::Min(Box::new(a), Box::new(b))
}

/// `max(a, b)`.
pub fn max(a: Expr, b: Expr) -> Expr {
    Expr::Max(Box::new(a), Box::new(b))
}

/// `|a|`.
pub fn abs(a: Expr) -> Expr {
    Expr::Abs(Box::new(a))
}

/// `⌊a / b⌋`.
pub fn floor_div(a: Expr, b: Expr) -> Expr {
    Expr::FloorDiv(Box::new(a), Box::new(b))
}

macro_rules! binary {
    ($trait:ident, $method:ident, $variant:ident) => {
        impl $trait for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::$variant(Box::new(self), Box::new(rhs))
            }
        }
        impl $trait<i64> for Expr {
            type Output = Expr;
            fn $method(self, rhs: i64) -> Expr {
                Expr::$variant(Box::new(self), Box::new(Expr::Int(rhs)))
            }
        }
        impl $trait<Expr> for i64 {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::$variant(Box::new(Expr::Int(self)), Box::new(rhs))
            }
        }
    };
}
binary!(Add, add, Add);
binary!(Sub, sub, Sub);
binary!(Mul, mul, Mul);
binary!(Div, div, Div);

impl Expr {
    /// The value at `vars`.
    pub fn eval(&self, vars: &Vars) -> f64 {
        match self {
            Expr::Sym(s) => vars.get(*s),
            Expr::Int(n) => *n as f64,
            Expr::Add(a, b) => a.eval(vars) + b.eval(vars),
            Expr::Sub(a, b) => a.eval(vars) - b.eval(vars),
            Expr::Mul(a, b) => a.eval(vars) * b.eval(vars),
            Expr::Div(a, b) => a.eval(vars) / b.eval(vars),
            Expr::FloorDiv(a, b) => (a.eval(vars) / b.eval(vars)).floor(),
            Expr::Min(a, b) => a.eval(vars).min(b.eval(vars)),
            Expr::Max(a, b) => a.eval(vars).max(b.eval(vars)),
            Expr::Abs(a) => a.eval(vars).abs(),
        }
    }

    /// Binding strength: sums 1, products 2, atoms 3.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Add(..) | Expr::Sub(..) => 1,
            Expr::Mul(..) | Expr::Div(..) => 2,
            _ => 3,
        }
    }

    /// Whether the expression mentions `s`.
    pub fn mentions(&self, s: Sym) -> bool {
        match self {
            Expr::Sym(x) => *x == s,
            Expr::Int(_) => false,
            Expr::Abs(a) => a.mentions(s),
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Div(a, b)
            | Expr::FloorDiv(a, b)
            | Expr::Min(a, b)
            | Expr::Max(a, b) => a.mentions(s) || b.mentions(s),
        }
    }

    /// The expression as plain text: `(P−1)·(F+B+W)`.
    pub fn text(&self) -> String {
        let wrap = |e: &Expr, at: u8| if e.precedence() < at { format!("({})", e.text()) } else { e.text() };
        match self {
            Expr::Sym(s) => s.text().to_string(),
            Expr::Int(n) => n.to_string(),
            Expr::Add(a, b) => format!("{}+{}", a.text(), b.text()),
            Expr::Sub(a, b) => format!("{}−{}", a.text(), wrap(b, 2)),
            // a·(b·c) is a·b·c, so a product on the right needs no parentheses.
            Expr::Mul(a, b) => format!("{}·{}", wrap(a, 2), wrap(b, 2)),
            Expr::Div(a, b) => format!("{}/{}", wrap(a, 2), wrap(b, 3)),
            Expr::FloorDiv(a, b) => format!("⌊{}/{}⌋", wrap(a, 2), wrap(b, 3)),
            Expr::Min(a, b) => format!("min({}, {})", a.text(), b.text()),
            Expr::Max(a, b) => format!("max({}, {})", a.text(), b.text()),
            Expr::Abs(a) => format!("|{}|", a.text()),
        }
    }

    /// The expression as an inline MathML `<math>` element, its text as the accessible
    /// alternative (a term shown on its own).
    pub fn math_element(&self) -> String {
        format!("<math alttext=\"{}\">{}</math>", escape(&self.text()), self.mathml())
    }

    /// The expression as presentation MathML (without the `<math>` element).
    pub fn mathml(&self) -> String {
        let wrap = |e: &Expr, at: u8| {
            if e.precedence() < at {
                format!("<mrow><mo>(</mo>{}<mo>)</mo></mrow>", e.mathml())
            } else {
                e.mathml()
            }
        };
        let call = |name: &str, a: &Expr, b: &Expr| {
            format!("<mrow><mi>{name}</mi><mo>(</mo>{}<mo>,</mo>{}<mo>)</mo></mrow>", a.mathml(), b.mathml())
        };
        match self {
            Expr::Sym(s) => s.mathml(),
            Expr::Int(n) => format!("<mn>{n}</mn>"),
            Expr::Add(a, b) => format!("<mrow>{}<mo>+</mo>{}</mrow>", a.mathml(), b.mathml()),
            Expr::Sub(a, b) => format!("<mrow>{}<mo>−</mo>{}</mrow>", a.mathml(), wrap(b, 2)),
            Expr::Mul(a, b) => format!("<mrow>{}<mo>·</mo>{}</mrow>", wrap(a, 2), wrap(b, 2)),
            Expr::Div(a, b) => format!("<mfrac>{}{}</mfrac>", a.mathml(), b.mathml()),
            Expr::FloorDiv(a, b) => {
                format!("<mrow><mo>⌊</mo><mfrac>{}{}</mfrac><mo>⌋</mo></mrow>", a.mathml(), b.mathml())
            }
            Expr::Min(a, b) => call("min", a, b),
            Expr::Max(a, b) => call("max", a, b),
            Expr::Abs(a) => format!("<mrow><mo>|</mo>{}<mo>|</mo></mrow>", a.mathml()),
        }
    }
}

/// Passes a term stands for: device `device` waits (or works) while `passes` run.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// The device whose idle time or work the term counts.
    pub device: u32,
    /// The passes that make it up: the ones the device waits for, or its own.
    pub passes: Vec<Pass>,
}

/// One named part of a formula.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// What it is, in words ("warm-up: the last device waits for the first forward").
    pub name: &'static str,
    /// Its expression.
    pub expr: Expr,
    /// The passes it stands for, for the chart to highlight (empty: not located).
    pub marks: Vec<Mark>,
    /// Whether the formula subtracts it (time another pass fills).
    pub negative: bool,
}

impl Term {
    /// A term not located on the chart.
    pub fn new(name: &'static str, expr: Expr) -> Term {
        Term { name, expr, marks: Vec::new(), negative: false }
    }

    /// A term the formula subtracts.
    pub fn minus(name: &'static str, expr: Expr) -> Term {
        Term { negative: true, ..Term::new(name, expr) }
    }

    /// Its signed value at `vars`.
    fn eval(&self, vars: &Vars) -> f64 {
        let v = self.expr.eval(vars);
        if self.negative {
            -v
        } else {
            v
        }
    }

    /// `+` or `−` before it in a sum.
    fn sign(&self) -> &'static str {
        if self.negative {
            "−"
        } else {
            "+"
        }
    }

    /// The term, standing for `marks`.
    pub fn marking(self, marks: Vec<Mark>) -> Term {
        Term { marks, ..self }
    }
}

/// A formula: the sum of its terms, of one device `d` when `per_device` (its value is then the
/// largest over the devices, as `simulate` reports the peak).
#[derive(Clone, Debug, PartialEq)]
pub struct Formula {
    /// The terms, summed.
    pub terms: Vec<Term>,
    /// Whether the terms read the device `d`.
    pub per_device: bool,
    /// Where it is stated: the paper and its section or equation, or how it was derived.
    pub source: &'static str,
}

/// What the property tests prove a formula derived here with.
pub const DERIVED_HERE: &str = "derived here, proven by property test";

impl Formula {
    /// A formula of `terms`, citing `source`; per device when a term reads `d`.
    pub fn new(source: &'static str, terms: Vec<Term>) -> Formula {
        let per_device = terms.iter().any(|t| t.expr.mentions(Sym::D));
        Formula { terms, per_device, source }
    }

    /// The sum of the terms at `vars`.
    pub fn eval(&self, vars: &Vars) -> f64 {
        self.terms.iter().map(|t| t.eval(vars)).sum()
    }

    /// Its value at each of the `P` devices.
    pub fn per_device_values(&self, vars: &Vars) -> Vec<f64> {
        let devices = vars.get(Sym::P) as u32;
        (0..devices).map(|d| self.eval(&vars.at_device(d))).collect()
    }

    /// Its value: the largest over the devices for a per-device formula.
    pub fn value(&self, vars: &Vars) -> f64 {
        if self.per_device {
            self.per_device_values(vars).into_iter().fold(f64::NEG_INFINITY, f64::max)
        } else {
            self.eval(vars)
        }
    }

    /// The device whose value is the formula's (the first with the largest), for a
    /// per-device formula.
    pub fn peak_device(&self, vars: &Vars) -> Option<u32> {
        if !self.per_device {
            return None;
        }
        let values = self.per_device_values(vars);
        let top = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        values.iter().position(|&v| v == top).map(|d| d as u32)
    }

    /// Each term's signed value where the formula takes its value (at the peak device).
    pub fn term_values(&self, vars: &Vars) -> Vec<f64> {
        let at = self.peak_device(vars).map_or_else(|| vars.clone(), |d| vars.at_device(d));
        self.terms.iter().map(|t| t.eval(&at)).collect()
    }

    /// As text: the terms joined by `+`, `max over d of …` for a per-device formula.
    pub fn text(&self) -> String {
        let mut sum = String::new();
        for (i, term) in self.terms.iter().enumerate() {
            match (i, term.negative) {
                (0, false) => {}
                (0, true) => sum.push('−'),
                _ => {
                    let _ = write!(sum, " {} ", term.sign());
                }
            }
            sum.push_str(&term.expr.text());
        }
        if self.per_device {
            format!("max over devices d of {sum}")
        } else {
            sum
        }
    }

    /// As a MathML `<math>` element, with the text as its accessible alternative.
    pub fn mathml(&self) -> String {
        let mut out = format!("<math display=\"block\" alttext=\"{}\"><mrow>", escape(&self.text()));
        if self.per_device {
            out.push_str("<munder><mo movablelimits=\"true\">max</mo><mi>d</mi></munder>");
        }
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 || term.negative {
                let _ = write!(out, "<mo>{}</mo>", term.sign());
            }
            let _ = write!(out, "<mrow>{}</mrow>", term.expr.mathml());
        }
        out.push_str("</mrow></math>");
        out
    }
}

/// `text` with XML's special characters escaped, for an attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Which formula an assumption is needed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needed {
    /// The bubble's.
    Bubble,
    /// The memory's.
    Memory,
    /// Both.
    Both,
}

impl Needed {
    /// Whether a formula of `by` needs it.
    fn by(self, by: Needed) -> bool {
        self == Needed::Both || self == by
    }
}

/// A condition a formula needs, checked against the settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Assumption {
    /// The condition in words ("no communication (comm = 0)").
    pub text: String,
    /// Whether it holds for the settings.
    pub holds: bool,
    /// Which formula needs it.
    pub needed: Needed,
}

impl Assumption {
    /// A condition both formulas need.
    pub fn new(text: impl Into<String>, holds: bool) -> Assumption {
        Assumption { text: text.into(), holds, needed: Needed::Both }
    }

    /// A condition only the bubble needs.
    pub fn bubble(text: impl Into<String>, holds: bool) -> Assumption {
        Assumption { needed: Needed::Bubble, ..Assumption::new(text, holds) }
    }

    /// A condition only the memory needs.
    pub fn memory(text: impl Into<String>, holds: bool) -> Assumption {
        Assumption { needed: Needed::Memory, ..Assumption::new(text, holds) }
    }

    /// No communication (`comm = 0`), a bubble condition.
    pub fn no_comm(params: &ScheduleParams) -> Assumption {
        Assumption::bubble("no communication (comm = 0)", params.costs.comm == 0.0)
    }

    /// Sends that do not block (`--p2p async`), a bubble condition: every closed form times
    /// fire-and-forget sends; under blocking ones a sender also waits for its receiver.
    pub fn async_sends(params: &ScheduleParams) -> Assumption {
        Assumption::bubble("sends do not block (--p2p async)", params.costs.p2p.is_async())
    }
}

/// A family's closed forms for one setting: what its bubble and peak activation memory are,
/// why, and under which conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The bubble (the quantity `quantity` names), when the family has a formula.
    pub bubble: Option<Formula>,
    /// What the bubble formula predicts.
    pub quantity: BubbleQuantity,
    /// The peak activation memory over the devices, when the family has a formula.
    pub memory: Option<Formula>,
    /// The conditions, each checked.
    pub assumptions: Vec<Assumption>,
    /// The symbols' values.
    pub vars: Vars,
}

impl Explanation {
    /// An explanation at `params` (options defaulted) with these formulas and assumptions; the
    /// bubble is `cost − ideal`.
    pub fn new(
        params: &ScheduleParams,
        bubble: Option<Formula>,
        memory: Option<Formula>,
        assumptions: Vec<Assumption>,
    ) -> Explanation {
        Explanation { bubble, quantity: BubbleQuantity::CostMinusIdeal, memory, assumptions, vars: Vars::of(params) }
    }

    /// Whether every assumption a formula of `which` needs holds.
    pub fn holds(&self, which: Needed) -> bool {
        self.assumptions.iter().filter(|a| a.needed.by(which)).all(|a| a.holds)
    }

    /// Whether every assumption holds.
    pub fn all_hold(&self) -> bool {
        self.assumptions.iter().all(|a| a.holds)
    }

    /// The bubble formula's value, whether or not its assumptions hold.
    pub fn bubble_value(&self) -> Option<f64> {
        self.bubble.as_ref().map(|f| f.value(&self.vars))
    }

    /// The memory formula's value (the largest device's), whether or not its assumptions hold.
    pub fn memory_value(&self) -> Option<f64> {
        self.memory.as_ref().map(|f| f.value(&self.vars))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: Sym) -> Expr {
        sym(x)
    }

    /// Every family's closed forms time async sends: under `--p2p blocking` each explanation
    /// names the broken condition for its bubble, and async ones are as they were (issue 43,
    /// pass 6, item 5).
    #[test]
    fn every_explanation_breaks_under_blocking_sends() {
        let mut explained = 0;
        for family in crate::registry::FAMILIES {
            let params = ScheduleParams::new(4, 8);
            let Some(plain) = family.explanation(&params) else { continue };
            assert!(plain.assumptions.iter().all(|a| !a.text.contains("--p2p")), "{}", family.name);
            let mut blocking = params.clone();
            blocking.costs.p2p = crate::params::P2p::Blocking;
            let e = family.explanation(&blocking).expect("an explanation");
            let sends: Vec<_> = e.assumptions.iter().filter(|a| a.text.contains("--p2p async")).collect();
            assert_eq!(sends.len(), 1, "{}", family.name);
            assert!(!sends[0].holds && sends[0].needed == Needed::Bubble, "{}", family.name);
            assert!(!e.holds(Needed::Bubble), "{}", family.name);
            explained += 1;
        }
        assert!(explained > 10);
    }

    #[test]
    fn text_puts_parentheses_only_where_needed() {
        let e = (s(Sym::P) - 1) * (s(Sym::F) + s(Sym::B) + s(Sym::W));
        assert_eq!(e.text(), "(P−1)·(F+B+W)");
        assert_eq!((s(Sym::P) - (s(Sym::D) - 1)).text(), "P−(d−1)");
        assert_eq!((s(Sym::M) * s(Sym::MemF) / s(Sym::V)).text(), "M·mem-f/V");
    }

    #[test]
    fn values_follow_the_symbols() {
        let params = ScheduleParams::new(4, 8);
        let vars = Vars::of(&params);
        let e = (s(Sym::P) - 1) * (s(Sym::F) + s(Sym::B) + s(Sym::W));
        assert_eq!(e.eval(&vars), 9.0);
        let held = Formula::new(DERIVED_HERE, vec![Term::new("held", (s(Sym::P) - s(Sym::D)) * s(Sym::MemF))]);
        assert!(held.per_device);
        assert_eq!(held.per_device_values(&vars), vec![4.0, 3.0, 2.0, 1.0]);
        assert_eq!(held.value(&vars), 4.0);
    }

    #[test]
    fn a_terms_math_element_carries_its_text_escaped() {
        let e = sym(Sym::P) - int(1);
        let m = e.math_element();
        assert!(m.starts_with("<math alttext=\"P−1\"><mrow><mi>P</mi>"), "{m}");
        assert!(m.ends_with("</mrow></math>") && m.matches("<math").count() == 1, "{m}");
    }

    #[test]
    fn mathml_is_one_math_element_with_its_text_as_alternative() {
        let f = Formula::new(DERIVED_HERE, vec![Term::new("x", min(s(Sym::P), s(Sym::M)) * s(Sym::MemF) / 2)]);
        let m = f.mathml();
        assert!(m.starts_with("<math display=\"block\" alttext=\"min(P, M)·mem-f/2\">"), "{m}");
        assert!(m.contains("<mfrac>"), "{m}");
        assert_eq!(m.matches("<math").count(), 1);
    }

    #[test]
    fn a_prediction_gives_only_the_values_whose_assumptions_hold() {
        let params = ScheduleParams::new(4, 8);
        let bubble = Formula::new(DERIVED_HERE, vec![Term::new("b", s(Sym::P) * s(Sym::F))]);
        let memory = Formula::new(DERIVED_HERE, vec![Term::new("m", s(Sym::MemF))]);
        let e = Explanation::new(&params, Some(bubble), Some(memory), vec![Assumption::bubble("never", false)]);
        let p = e.prediction("", "");
        assert_eq!(p.bubble, None);
        assert_eq!(p.peak_memory, Some(vec![1.0; 4]));
        assert!(!e.all_hold());
        assert_eq!(e.bubble_value(), Some(4.0));
    }
}
