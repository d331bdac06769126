//! Units and number formatting: the leaf every other module may use; it uses nothing of the
//! crate.
//!
//! [`Units`] says what a run's numbers mean: abstract cost units (the papers' figures), or µs
//! and bytes when the costs come from a model. Labels, summaries, messages and memory ticks
//! read it. The submodules format numbers ([`number`]), byte sizes ([`bytes`]) and user text
//! ([`text`]), find the name a user meant ([`names`]), and sort cold lists with one compiled
//! sort ([`sort`]).

/// Largest time or memory a cost may take (µs or bytes, or cost units).
pub const MAX_COST: f64 = 1e12;

pub mod bytes;
pub mod names;
pub mod number;
#[cfg(feature = "wire")]
pub mod packed;
pub mod sort;
pub mod text;

pub use bytes::{byte_unit, format_bytes, format_bytes_up, parse_size, size_text, BadSize, BYTE_UNITS, GIB, MIB};
pub use number::{
    difference, format_at_scale, format_fixed, format_micros, format_number, format_signed, format_significant,
    is_noise_at, quotient, round_up, short_number, significant_decimals, without_noise, without_noise_in,
};
pub use text::{clean_text, shell_word};

/// The units of a figure's times and memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Units {
    /// Times in cost units, memory in mem-f's unit.
    #[default]
    Cost,
    /// Times in µs, memory in bytes (costs derived from a model).
    Model,
    /// Times in µs, memory in mem-f's unit (a measured run: its trace has times, no memory).
    Measured,
}

impl Units {
    /// Whether times are µs (a model's costs, or a measured run's).
    pub fn micros(self) -> bool {
        self != Units::Cost
    }

    /// Whether memory is bytes.
    pub fn bytes(self) -> bool {
        self == Units::Model
    }
}

impl Units {
    /// A memory amount in an error or hint: exact in mem-f's unit, and in bytes to 2 decimals
    /// of a GiB (MiB, KiB) rounded *up*, so that a limit read off a message and typed back
    /// (`--mem-limit 8.09GiB`) is never below what the message asked for.
    pub fn memory_in_message(self, v: f64) -> String {
        match self {
            Units::Cost | Units::Measured => short_number(v),
            Units::Model => match byte_unit(v) {
                ("B", _) => format!("{} B", format_number(v.ceil(), 0)),
                (name, size) => format!("{} {name}", format_number((v / size * 100.0 - 1e-9).ceil() / 100.0, 2)),
            },
        }
    }

    /// A time in these units.
    pub fn time(self, v: f64) -> String {
        match self {
            Units::Cost => format_number(v, 3),
            Units::Model | Units::Measured => format_micros(v),
        }
    }

    /// A memory amount in these units.
    pub fn memory(self, v: f64) -> String {
        match self {
            Units::Cost => format_number(v, 3),
            Units::Model => format_bytes(v),
            Units::Measured => format_number(v, 3),
        }
    }

    /// A time to four decimals in cost units (µs, ms, s with a model or a measured run): what
    /// detailed readouts print.
    pub fn time_detail(self, v: f64) -> String {
        if self.micros() {
            format_micros(v)
        } else {
            format_number(v, 4)
        }
    }

    /// A memory amount to four decimals in mem-f's unit (GiB, MiB, … for bytes): never the
    /// limit printed for a peak just above it.
    pub fn memory_detail(self, v: f64) -> String {
        if self.bytes() {
            format_bytes(v)
        } else {
            format_number(v, 4)
        }
    }

    /// The time axis' label.
    pub fn time_axis(self) -> &'static str {
        match self {
            Units::Cost => "time (cost units)",
            Units::Model | Units::Measured => "time",
        }
    }

    /// What the memory chart's title says the unit is.
    pub fn memory_unit(self) -> &'static str {
        match self {
            Units::Cost => "unit of mem-f",
            Units::Model => "bytes",
            Units::Measured => "unit of mem-f",
        }
    }

    /// The scale time ticks are counted in for an axis spanning `span`, and its suffix:
    /// seconds or milliseconds for µs (`0.5 s`, not `500k`), the plain number otherwise.
    pub fn time_ticks(self, span: f64) -> (f64, &'static str) {
        match self {
            Units::Cost => (1.0, ""),
            _ if span >= 1e6 => (1e6, " s"),
            _ if span >= 1e3 => (1e3, " ms"),
            _ => (1.0, " µs"),
        }
    }

    /// The scale memory ticks are counted in for a chart reaching `max`, and its suffix:
    /// GiB or MiB for bytes, the plain number otherwise.
    pub fn memory_ticks(self, max: f64) -> (f64, &'static str) {
        match self {
            Units::Model if max >= GIB => (GIB, " GiB"),
            Units::Model if max >= MIB => (MIB, " MiB"),
            _ => (1.0, ""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_units_read_as_people_write_them() {
        assert_eq!(Units::Model.time(850.0), "850 µs");
        assert_eq!(Units::Model.time(12_400.0), "12.4 ms");
        assert_eq!(Units::Model.time(2_090_634.0), "2.09 s");
        assert_eq!(Units::Model.memory(80.0 * GIB), "80 GiB");
        assert_eq!(Units::Cost.time(2.5), "2.5");
        assert_eq!(Units::Model.memory_ticks(3.0 * GIB), (GIB, " GiB"));
        assert_eq!(Units::Model.memory_ticks(3.0 * MIB), (MIB, " MiB"));
        assert_eq!(Units::Cost.memory_ticks(3.0 * GIB), (1.0, ""));
        assert_eq!(Units::Model.time_ticks(4.1e6), (1e6, " s"));
        assert_eq!(Units::Model.time_ticks(1.5e6), (1e6, " s"), "1.5 s, not 1.5k ms");
        assert_eq!(Units::Model.time_ticks(1.5e3), (1e3, " ms"), "1.5 ms, not 1.5k µs");
        assert_eq!(Units::Model.time_ticks(800.0), (1.0, " µs"));
        assert_eq!(Units::Cost.time_ticks(4.1e6), (1.0, ""));
    }

    /// Memory in messages: exact in mem-f's unit; in bytes rounded up, so a limit read off a
    /// message and typed back always suffices (checked against `parse_bytes`).
    #[test]
    fn memory_in_messages_rounds_up_and_reads_back_at_least_as_large() {
        assert_eq!(Units::Cost.memory_in_message(0.1 + 0.2), (0.1 + 0.2).to_string());
        assert_eq!(Units::Cost.memory_in_message(1e300), "1e300");
        assert_eq!(Units::Model.memory_in_message(80.0 * GIB), "80 GiB");
        assert_eq!(Units::Model.memory_in_message(8_681_054_208.0), "8.09 GiB");
        assert_eq!(Units::Model.memory_in_message(512.0), "512 B");
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let v = (seed % 1_000_000_000_000) as f64 * 1.37;
            let text = Units::Model.memory_in_message(v).replace(' ', "");
            let back = crate::model::parse_bytes(&text, crate::Field::MemLimit).unwrap();
            assert!(back >= v && back <= v * 1.01 + 1024.0, "{v} → {text} → {back}");
        }
    }
}
