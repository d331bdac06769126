//! The one drawing routine: a [`Scene`] onto any plotters backend.
//!
//! The web app draws onto a canvas and the CLI and exports onto SVG through this same
//! function, so what the user sees is what they export.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::scene::{Anchor, Item, Scene};
use super::theme::Rgb;

/// plotters' SVG backend writes `font-size` as the requested size divided by 1.24 (its
/// px-to-pt guess) while the canvas backend uses pixels: SVG output asks for sizes times this
/// factor so text comes out the same size in both.
pub const SVG_FONT_FACTOR: f64 = 1.24;

/// Why a scene could not be drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrawError {
    /// The backend (canvas, SVG writer) refused an operation; its own description.
    Backend(String),
}

impl std::fmt::Display for DrawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DrawError::Backend(e) => write!(f, "drawing failed: {e}"),
        }
    }
}

impl std::error::Error for DrawError {}

/// Draws `scene` onto `area`, scaling every font size by `font_factor` (1 for pixel backends,
/// [`SVG_FONT_FACTOR`] for SVG).
///
/// # Errors
/// [`DrawError::Backend`] when the backend fails.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scene: &Scene,
    font_factor: f64,
) -> Result<(), DrawError> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| DrawError::Backend(format!("{e:?}"));
    area.fill(&color(scene.background)).map_err(err)?;
    for item in &scene.items {
        match item {
            Item::Rect { x0, y0, x1, y1, fill, alpha, stroke } => {
                let (a, b) = ((px(*x0), px(*y0)), (px(*x1).max(px(*x0) + 1), px(*y1).max(px(*y0) + 1)));
                let fill_style = color(*fill).mix(*alpha).filled();
                area.draw(&Rectangle::new([a, b], fill_style)).map_err(err)?;
                if let Some((c, w)) = stroke {
                    let width = (w.round() as u32).max(1);
                    area.draw(&Rectangle::new([a, b], color(*c).stroke_width(width))).map_err(err)?;
                }
            }
            Item::Text { x, y, text, size, color: c, anchor, bold } => {
                if text.is_empty() {
                    continue;
                }
                let style = if *bold { FontStyle::Bold } else { FontStyle::Normal };
                let h = match anchor {
                    Anchor::Start => HPos::Left,
                    Anchor::Middle => HPos::Center,
                    Anchor::End => HPos::Right,
                };
                let font = FontDesc::new(FontFamily::Name(&scene.font), size * font_factor, style)
                    .color(&color(*c))
                    .pos(Pos::new(h, VPos::Center));
                area.draw(&Text::new(text.as_str(), (px(*x), px(*y)), font)).map_err(err)?;
            }
            Item::Line { points, color: c, width } => {
                let pts: Vec<(i32, i32)> = points.iter().map(|&(x, y)| (px(x), px(y))).collect();
                let width = (width.round() as u32).max(1);
                area.draw(&PathElement::new(pts, color(*c).stroke_width(width))).map_err(err)?;
            }
            Item::Polygon { points, color: c } => {
                let pts: Vec<(i32, i32)> = points.iter().map(|&(x, y)| (px(x), px(y))).collect();
                area.draw(&Polygon::new(pts, color(*c).filled())).map_err(err)?;
            }
            Item::Dot { x, y, r, color: c } => {
                let r = (r.round() as i32).max(1);
                area.draw(&Circle::new((px(*x), px(*y)), r, color(*c).filled())).map_err(err)?;
            }
        }
    }
    area.present().map_err(err)?;
    Ok(())
}

/// Draws `scene` as an SVG document.
///
/// # Errors
/// Never in practice (the SVG backend writes to a string); [`DrawError`] otherwise.
pub fn to_svg(scene: &Scene) -> Result<String, DrawError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (scene.width.max(1), scene.height.max(1))).into_drawing_area();
        draw(&root, scene, SVG_FONT_FACTOR)?;
    }
    Ok(font_sizes_without_noise(&out))
}

/// `svg` with each `font-size="…"` without the float noise of the backend's division by
/// [`SVG_FONT_FACTOR`] (`13`, not `13.000000000000002`).
fn font_sizes_without_noise(svg: &str) -> String {
    const KEY: &str = "font-size=\"";
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(KEY) {
        let (head, tail) = rest.split_at(at + KEY.len());
        out.push_str(head);
        let end = tail.find('"').unwrap_or(tail.len());
        match tail[..end].parse::<f64>() {
            Ok(v) => out.push_str(&crate::units::without_noise(v).to_string()),
            Err(_) => out.push_str(&tail[..end]),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn px(v: f64) -> i32 {
    if v.is_finite() {
        v.round().clamp(-1e7, 1e7) as i32
    } else {
        0
    }
}

fn color(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_font_sizes_print_without_noise() {
        let svg = r#"<text font-size="13.000000000000002" x="1">a</text><text font-size="11">b</text>"#;
        assert_eq!(
            font_sizes_without_noise(svg),
            r#"<text font-size="13" x="1">a</text><text font-size="11">b</text>"#
        );
        assert_eq!(font_sizes_without_noise("font-size=\"x"), "font-size=\"x");
    }
}
