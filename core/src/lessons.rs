//! Lessons: short sequences of settings, each with a caption, that a teacher steps through.
//! A lesson travels in a permalink's `lesson` key, as the name of a built-in one or as its
//! own text; `lesson-step` says which step is shown. Uses the permalink codec.
//!
//! A lesson's text is its title on the first line, then a caption line and a settings line
//! (a permalink query) per step:
//!
//! ```text
//! My lesson
//! 1F1B holds at most P forwards' activations.
//! schedule=1f1b&devices=4&microbatches=8
//! ```

use crate::permalink::{self, Permalink};

pub use crate::permalink::{LESSON_KEY, MAX_LESSON_TEXT};
/// The permalink key that holds the step shown (1 is the first).
pub const LESSON_STEP_KEY: &str = "lesson-step";
/// The most steps a lesson may have.
pub const MAX_STEPS: usize = 40;

/// One step: what to say, and the settings to show while saying it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LessonStep {
    /// The caption.
    pub caption: String,
    /// The settings, as a permalink query (`schedule=1f1b&devices=4`).
    pub settings: String,
}

/// A lesson.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lesson {
    /// Its title.
    pub title: String,
    /// Its steps, at least one.
    pub steps: Vec<LessonStep>,
}

/// A lesson that ships with Bubblescope.
pub struct BuiltIn {
    /// The name a link gives (`lesson=zero-bubble`).
    pub name: &'static str,
    /// Its title.
    pub title: &'static str,
    /// Its steps: caption, settings.
    pub steps: &'static [(&'static str, &'static str)],
}

/// The lessons that ship with Bubblescope.
pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "why-pipelines-idle",
        title: "Why pipelines idle",
        steps: &[
            (
                "GPipe runs every forward, then every backward. While the pipeline fills, the last device waits (P−1)·F; while it drains, the first waits (P−1)·B. That idle time is the bubble.",
                "schedule=gpipe&devices=4&microbatches=4",
            ),
            (
                "Four times the microbatches: the bubble is the same (P−1)(F+B) per device, but now it is a smaller share of the step. The price: every forward's activations are held until its backward.",
                "schedule=gpipe&devices=4&microbatches=16",
            ),
            (
                "1F1B starts each backward as soon as it can, alternating one forward and one backward. The bubble is unchanged, but a device holds at most P forwards' activations instead of M.",
                "schedule=1f1b&devices=4&microbatches=16",
            ),
            (
                "Interleaved 1F1B gives each device two smaller chunks of the model. The fill and the drain shrink by the chunk count; each microbatch now hops between devices twice as often.",
                "schedule=interleaved-1f1b&devices=4&microbatches=16&chunks=2",
            ),
        ],
    },
    BuiltIn {
        name: "zero-bubble",
        title: "Zero bubble: what the bubble costs and what removes it",
        steps: &[
            (
                "1F1B with the backward split in two: B, the input gradient the previous device waits for, and W, the weight gradient nobody waits for. Here they still run back to back.",
                "schedule=1f1b&devices=4&microbatches=8",
            ),
            (
                "ZB-H1 lets W wait. In the drain, a device runs the B the previous device needs first and fills its idle time with W: the bubble drops from (P−1)(F+B+W) to (P−1)(F+B−W), at 1F1B's memory.",
                "schedule=zb-h1&devices=4&microbatches=8",
            ),
            (
                "ZB-H2 also fills the warm-up: more forwards before the first backward. With W moved to the end the bubble is gone, at close to twice 1F1B's memory.",
                "schedule=zb-h2&devices=4&microbatches=8",
            ),
            (
                "ZB-V places two chunks per device as a V, so microbatch 0 ends where it started and its backward begins at once: close to zero bubble at 1F1B's memory.",
                "schedule=zb-v&devices=4&microbatches=8",
            ),
        ],
    },
    BuiltIn {
        name: "memory-versus-bubble",
        title: "Memory versus bubble",
        steps: &[
            (
                "GPipe holds every microbatch's activations: its peak memory grows with M.",
                "schedule=gpipe&devices=4&microbatches=8",
            ),
            (
                "1F1B caps the first device at P forwards' activations, the same bubble.",
                "schedule=1f1b&devices=4&microbatches=8",
            ),
            (
                "ZB-H2 buys a zero bubble with close to twice 1F1B's activations on the first device (2P − 1 forwards' worth).",
                "schedule=zb-h2&devices=4&microbatches=8",
            ),
            (
                "V-Half places two chunks per device as a V and holds about half of 1F1B's activations (⌊(P+2)/2⌋ forwards' worth): some bubble comes back.",
                "schedule=v-half&devices=4&microbatches=8",
            ),
            (
                "Recomputing every forward before its backward frees the activations in between: less memory, paid in time (the R passes).",
                "schedule=1f1b&devices=4&microbatches=8&recompute=full",
            ),
        ],
    },
];

impl BuiltIn {
    /// As a lesson.
    pub fn lesson(&self) -> Lesson {
        Lesson {
            title: self.title.to_string(),
            steps: self
                .steps
                .iter()
                .map(|(caption, settings)| LessonStep {
                    caption: (*caption).to_string(),
                    settings: (*settings).to_string(),
                })
                .collect(),
        }
    }
}

impl Lesson {
    /// A lesson from a link's `lesson` value: a built-in name, or a lesson's text.
    pub fn parse(value: &str) -> Result<Lesson, String> {
        let value = value.trim();
        if let Some(b) = BUILT_IN.iter().find(|b| b.name == value) {
            return Ok(b.lesson());
        }
        if !value.contains('\n') {
            let names: Vec<&str> = BUILT_IN.iter().map(|b| b.name).collect();
            return Err(format!(
                "no lesson is named `{}`\nhint: the lessons are {}; or give a lesson's text: a title line, then a caption line and a settings line per step",
                crate::units::clean_text(value).chars().take(40).collect::<String>(),
                names.join(", ")
            ));
        }
        if value.len() > MAX_LESSON_TEXT {
            return Err(format!(
                "the lesson is {} bytes long; at most {MAX_LESSON_TEXT} fit in a link\nhint: split it into shorter lessons",
                value.len()
            ));
        }
        let mut lines = value.lines().map(str::trim).filter(|l| !l.is_empty());
        let title = lines.next().unwrap_or_default().to_string();
        let rest: Vec<&str> = lines.collect();
        if rest.is_empty() || rest.len() % 2 != 0 {
            return Err(format!(
                "the lesson `{}` has {} after its title (blank lines aside); each step needs two, a caption and its settings\nhint: e.g. `1F1B holds P activations` then `schedule=1f1b&devices=4`",
                crate::units::clean_text(&title).chars().take(40).collect::<String>(),
                crate::schedule::counted(u32::try_from(rest.len()).unwrap_or(u32::MAX), "line", "lines")
            ));
        }
        if rest.len() / 2 > MAX_STEPS {
            return Err(format!(
                "the lesson has {} steps; at most {MAX_STEPS}\nhint: split it into shorter lessons",
                rest.len() / 2
            ));
        }
        let steps = rest
            .chunks(2)
            .map(|pair| LessonStep { caption: pair[0].to_string(), settings: pair[1].to_string() })
            .collect();
        Ok(Lesson { title, steps })
    }

    /// The `lesson` value for a link: a built-in's name when it is one, else its text.
    pub fn to_value(&self) -> String {
        if let Some(b) = BUILT_IN.iter().find(|b| b.lesson() == *self) {
            return b.name.to_string();
        }
        let mut out = self.title.replace('\n', " ");
        for s in &self.steps {
            out.push('\n');
            out.push_str(&s.caption.replace('\n', " "));
            out.push('\n');
            out.push_str(&s.settings.replace('\n', ""));
        }
        out
    }

    /// The link that shows step `index` (0-based): the step's settings, `keep`'s view keys
    /// (theme, embed, …; not its own settings), this lesson and the step. The warnings say
    /// what in the step's settings did not parse.
    pub fn link_for(&self, index: usize, keep: &Permalink) -> Option<(Permalink, Vec<String>)> {
        let step = self.steps.get(index)?;
        let (mut link, warnings) = permalink::parse(&step.settings);
        let own: Vec<(String, String)> = link.extra.drain(..).collect();
        link.extra = keep.extra.iter().filter(|(k, _)| k != LESSON_KEY && k != LESSON_STEP_KEY).cloned().collect();
        for (k, v) in own {
            link.set_extra(&k, Some(v));
        }
        link.set_extra(LESSON_KEY, Some(self.to_value()));
        link.set_extra(LESSON_STEP_KEY, Some((index + 1).to_string()));
        Some((link, warnings))
    }

    /// This lesson with the settings of `link` added as a step after the others.
    pub fn with_step(&self, caption: &str, link: &Permalink) -> Lesson {
        let mut out = self.clone();
        out.steps.push(LessonStep { caption: caption.trim().to_string(), settings: settings_query(link) });
        out
    }
}

/// The settings of `link` as a query, without its view keys.
pub fn settings_query(link: &Permalink) -> String {
    let bare = Permalink { extra: Vec::new(), ..link.clone() };
    let query = permalink::to_query(&bare);
    // The format version is the link's, not the step's.
    query.strip_prefix(&format!("v={}&", permalink::VERSION)).unwrap_or(&query).to_string()
}

/// The step a link shows (0-based), from `lesson-step` (1-based), within `steps`.
pub fn step_of(link: &Permalink, steps: usize) -> usize {
    link.extra(LESSON_STEP_KEY).and_then(|v| v.parse::<usize>().ok()).map_or(0, |s| s.clamp(1, steps.max(1)) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_step_parses_without_a_warning_and_differs_from_the_one_before() {
        for b in BUILT_IN {
            let lesson = b.lesson();
            assert!(lesson.steps.len() >= 3, "{}", b.name);
            let mut before = None;
            for (i, _) in lesson.steps.iter().enumerate() {
                let (link, warnings) = lesson.link_for(i, &Permalink::default()).expect("a step");
                assert!(warnings.is_empty(), "{} step {i}: {warnings:?}", b.name);
                assert!(permalink::unknown_keys(&link, &[LESSON_KEY, LESSON_STEP_KEY]).is_empty());
                let settings = link.settings();
                let params = settings.effective_params().expect("prices");
                crate::registry::run(&link.schedule, &params).unwrap_or_else(|e| panic!("{} step {i}: {e}", b.name));
                assert_ne!(Some(settings.clone()), before, "{} step {i} repeats the one before", b.name);
                before = Some(settings);
            }
        }
    }

    #[test]
    fn a_lesson_round_trips_through_a_link() {
        let base = Lesson { title: "Mine".into(), steps: vec![] };
        let (one, _) = permalink::parse("schedule=zb-h1&devices=6&microbatches=12&f=1.5");
        let (two, _) = permalink::parse("schedule=zb-v&devices=4&microbatches=8&theme=dark");
        let lesson = base.with_step("first & foremost", &one).with_step("then a V", &two);
        let (link, _) = lesson.link_for(1, &Permalink::default()).unwrap();
        let query = permalink::to_query(&link);
        let (back, warnings) = permalink::parse(&query);
        assert!(warnings.is_empty(), "{warnings:?}");
        let read = Lesson::parse(back.extra(LESSON_KEY).unwrap()).unwrap();
        assert_eq!(read, lesson);
        assert_eq!(step_of(&back, read.steps.len()), 1);
        assert_eq!(back.settings(), two.settings());
        // The step's settings are its own: theme is a view key and does not travel in a step.
        assert!(!read.steps[1].settings.contains("theme"));
        assert_eq!(read.steps[0].settings, "schedule=zb-h1&devices=6&microbatches=12&f=1.5");
    }

    #[test]
    fn built_ins_travel_by_name() {
        let lesson = BUILT_IN[1].lesson();
        assert_eq!(lesson.to_value(), "zero-bubble");
        assert_eq!(Lesson::parse("zero-bubble").unwrap(), lesson);
    }

    #[test]
    fn bad_lessons_say_what_is_wrong() {
        let e = Lesson::parse("zero-bubbel").unwrap_err();
        assert!(
            e.contains("no lesson is named `zero-bubbel`") && e.contains("hint: the lessons are why-pipelines-idle"),
            "{e}"
        );
        let e = Lesson::parse("Title\ncaption only").unwrap_err();
        assert!(e.contains("has 1 line after its title") && e.contains("hint:"), "{e}");
        let long = format!("T\n{}", "c\nschedule=1f1b\n".repeat(41));
        assert!(Lesson::parse(&long).unwrap_err().contains("41 steps"));
        let huge = format!("T\n{}\nschedule=1f1b", "x".repeat(MAX_LESSON_TEXT));
        assert!(Lesson::parse(&huge).unwrap_err().contains("at most 16384"));
    }

    #[test]
    fn the_step_is_clamped_to_the_lesson() {
        let mut link = Permalink::default();
        for (v, want) in [("0", 0), ("1", 0), ("3", 2), ("99", 3), ("x", 0), ("-1", 0)] {
            link.set_extra(LESSON_STEP_KEY, Some(v.into()));
            assert_eq!(step_of(&link, 4), want, "{v}");
        }
    }
}
