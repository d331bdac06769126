//! Scenes: the picture as a flat list of items in device pixels, before any backend.

use super::theme::{Rgb, Theme};
use crate::units::clean_text;

/// Horizontal text anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at x.
    Start,
    /// The text is centred on x.
    Middle,
    /// The text ends at x.
    End,
}

/// One drawable item. Coordinates are device pixels from the top-left corner.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A filled rectangle, optionally outlined.
    Rect {
        /// Left.
        x0: f64,
        /// Top.
        y0: f64,
        /// Right.
        x1: f64,
        /// Bottom.
        y1: f64,
        /// Fill colour.
        fill: Rgb,
        /// Fill opacity in `0..=1`.
        alpha: f64,
        /// Outline colour and width.
        stroke: Option<(Rgb, f64)>,
    },
    /// A line of text, vertically centred on y.
    Text {
        /// Anchor x.
        x: f64,
        /// Centre y.
        y: f64,
        /// The text (control characters already removed).
        text: String,
        /// Font size in device pixels.
        size: f64,
        /// Colour.
        color: Rgb,
        /// Horizontal anchor.
        anchor: Anchor,
        /// Bold weight.
        bold: bool,
    },
    /// A polyline.
    Line {
        /// The points.
        points: Vec<(f64, f64)>,
        /// Colour.
        color: Rgb,
        /// Width in device pixels.
        width: f64,
    },
    /// A filled polygon (the points in order, closed back to the first).
    Polygon {
        /// The corners.
        points: Vec<(f64, f64)>,
        /// Colour.
        color: Rgb,
    },
    /// A filled circle.
    Dot {
        /// Centre x.
        x: f64,
        /// Centre y.
        y: f64,
        /// Radius.
        r: f64,
        /// Colour.
        color: Rgb,
    },
}

/// How many passes the level of detail drew, merged and left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LodCounts {
    /// Passes drawn as their own bar.
    pub drawn: usize,
    /// Passes narrower than a pixel, drawn merged into runs.
    pub merged: usize,
    /// Passes outside the visible time range.
    pub culled: usize,
    /// Bars that got a text label.
    pub labelled: usize,
}

/// A picture ready to draw on any backend.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// Width in device pixels.
    pub width: u32,
    /// Height in device pixels.
    pub height: u32,
    /// Background colour.
    pub background: Rgb,
    /// Font family for every text item.
    pub font: String,
    /// Items in paint order.
    pub items: Vec<Item>,
    /// Level-of-detail counts.
    pub counts: LodCounts,
}

impl Scene {
    /// An empty scene.
    pub fn new(width: u32, height: u32, background: Rgb, font: &str) -> Scene {
        Scene { width, height, background, font: font.to_string(), items: Vec::new(), counts: LodCounts::default() }
    }

    /// An empty scene for a chart `width` × `height` CSS pixels at `scale` device pixels per
    /// CSS pixel, on `theme`'s background and in its font.
    pub(crate) fn for_chart(width: f64, height: f64, scale: f64, theme: &Theme) -> Scene {
        Scene::new((width * scale).round() as u32, (height * scale).round() as u32, theme.background, theme.font)
    }

    /// Adds a rectangle.
    pub fn rect(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, fill: Rgb) {
        self.items.push(Item::Rect { x0, y0, x1, y1, fill, alpha: 1.0, stroke: None });
    }

    /// Adds a line of text.
    pub fn text(&mut self, x: f64, y: f64, text: &str, size: f64, color: Rgb, anchor: Anchor) {
        self.items.push(Item::Text { x, y, text: clean_text(text), size, color, anchor, bold: false });
    }

    /// Adds a line of bold text.
    pub fn bold_text(&mut self, x: f64, y: f64, text: &str, size: f64, color: Rgb, anchor: Anchor) {
        self.items.push(Item::Text { x, y, text: clean_text(text), size, color, anchor, bold: true });
    }

    /// Adds a straight line.
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), color: Rgb, width: f64) {
        self.items.push(Item::Line { points: vec![from, to], color, width });
    }

    /// Adds a dashed straight line (horizontal or vertical dashes of `dash` pixels).
    pub fn dashed_line(&mut self, from: (f64, f64), to: (f64, f64), color: Rgb, width: f64, dash: f64) {
        let (dx, dy) = (to.0 - from.0, to.1 - from.1);
        let len = (dx * dx + dy * dy).sqrt();
        if len <= 0.0 || dash <= 0.0 {
            return;
        }
        let n = (len / dash).ceil() as usize;
        for i in (0..n).step_by(2) {
            let a = i as f64 * dash / len;
            let b = ((i + 1) as f64 * dash / len).min(1.0);
            self.line((from.0 + dx * a, from.1 + dy * a), (from.0 + dx * b, from.1 + dy * b), color, width);
        }
    }
}

/// `text`, cut at the end with `…` so that its estimated width at `size` stays within
/// `max_width` (empty when not even `…` fits).
pub fn fit_text(text: &str, size: f64, max_width: f64) -> String {
    if text_width(text, size) <= max_width {
        return text.to_string();
    }
    let budget = max_width - text_width("…", size);
    let mut out = String::new();
    let mut used = 0.0;
    for c in text.chars() {
        let w = text_width(c.encode_utf8(&mut [0; 4]), size);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    if budget < 0.0 {
        return String::new();
    }
    let kept = out.trim_end().len();
    out.truncate(kept);
    out.push('…');
    out
}

/// Estimated width of `text` at `size` pixels: a fixed per-character advance, the same on
/// every platform, so label fitting never depends on installed fonts.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars()
        .map(|c| match c {
            '.' | ',' | ':' | ';' | 'i' | 'l' | 'I' | '|' | '!' | '\'' => 0.3,
            '1' => 0.5,
            ' ' => 0.3,
            'm' | 'w' | 'M' | 'W' | '%' => 0.85,
            c if c.is_ascii_digit() => 0.58,
            c if c.is_ascii_uppercase() => 0.66,
            _ => 0.56,
        })
        .sum::<f64>()
        * size
}
