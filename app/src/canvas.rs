//! Canvas helpers: sizing to the device pixel ratio, element width, and drawing a scene.

use std::collections::HashMap;

use bubblescope::render::{draw, Scene};
use leptos::prelude::*;
use plotters::prelude::IntoDrawingArea as _;
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

type CanvasError = <CanvasBackend as DrawingBackend>::ErrorType;

/// plotters' canvas backend, with filled rectangles (most of a Gantt chart) drawn straight on
/// the 2D context and their colours cached: plotters-canvas formats and sets the fill style
/// for every rectangle, which dominated redraws of big schedules. Everything else goes to
/// plotters-canvas unchanged.
pub struct FastCanvas {
    inner: CanvasBackend,
    context: CanvasRenderingContext2d,
    colors: HashMap<(u8, u8, u8, u64), JsValue>,
    fill: Option<(u8, u8, u8, u64)>,
}

impl FastCanvas {
    /// A backend drawing on `canvas`, if it has a 2D context.
    pub fn new(canvas: &HtmlCanvasElement) -> Option<FastCanvas> {
        let context = canvas.get_context("2d").ok()??.dyn_into().ok()?;
        let inner = CanvasBackend::with_canvas_object(canvas.clone())?;
        Some(FastCanvas { inner, context, colors: HashMap::new(), fill: None })
    }

    fn set_fill(&mut self, c: BackendColor) {
        let key = (c.rgb.0, c.rgb.1, c.rgb.2, c.alpha.to_bits());
        if self.fill == Some(key) {
            return;
        }
        let value = self.colors.entry(key).or_insert_with(|| JsValue::from_str(&css_color(c)));
        // The JsValue overload is deprecated in favour of `set_fill_style_str`, which would
        // re-encode the string on every call; the cached JS string is the point here.
        #[allow(deprecated)]
        self.context.set_fill_style(value);
        self.fill = Some(key);
    }
}

// The methods in the trait's order.
impl DrawingBackend for FastCanvas {
    type ErrorType = CanvasError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.fill = None;
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        if !fill {
            return self.inner.draw_rect(upper_left, bottom_right, style, fill);
        }
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        self.set_fill(color);
        self.context.fill_rect(
            f64::from(upper_left.0),
            f64::from(upper_left.1),
            f64::from(bottom_right.0 - upper_left.0),
            f64::from(bottom_right.1 - upper_left.1),
        );
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let points: Vec<BackendCoord> = path.into_iter().collect();
        // Lines one pixel wide stay strokes: the browser draws them as hairlines, not outlines.
        let rects = if style.stroke_width() >= 2 { axis_path_rects(&points, style.stroke_width()) } else { None };
        // One path built by direct calls: a call per point is a few tens of nanoseconds, where
        // SVG path data (formatting every coordinate, then the browser parsing it) cost more
        // than the drawing.
        self.context.begin_path();
        match rects {
            Some(rects) => {
                // Filled once (non-zero winding): overlapping rectangles paint their union,
                // anti-aliased once, as the stroke would.
                for [x, y, w, h] in rects {
                    self.context.rect(x, y, w, h);
                }
                self.set_fill(color);
                self.context.fill();
            }
            None => {
                for (i, &(x, y)) in points.iter().enumerate() {
                    if i == 0 {
                        self.context.move_to(f64::from(x), f64::from(y));
                    } else {
                        self.context.line_to(f64::from(x), f64::from(y));
                    }
                }
                #[allow(deprecated)]
                self.context.set_stroke_style(&JsValue::from_str(&css_color(color)));
                self.context.set_line_width(f64::from(style.stroke_width()));
                self.context.stroke();
            }
        }
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.fill = None;
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.fill = None;
        self.inner.fill_polygon(vert, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.fill = None;
        self.inner.draw_text(text, style, pos)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<CanvasError>> {
        self.inner.estimate_text_size(text, style)
    }
}

/// `c` as CSS writes it, as plotters-canvas writes it.
fn css_color(c: BackendColor) -> String {
    format!("rgba({},{},{},{})", c.rgb.0, c.rgb.1, c.rgb.2, c.alpha)
}

/// The rectangles `[x, y, width, height]` whose union is the outline of the polyline `points`
/// stroked `width` pixels wide, when every segment is horizontal or vertical; `None` otherwise.
///
/// The memory chart's curves are such step lines, with a vertical run of up to four points in
/// every pixel column (its min/max decimation). Stroking them was most of the browser's
/// rasterising work per redraw at 16 devices × 64 microbatches (4.5 of 6 ms: the stroker
/// builds an outline with a join at every turn and reversal), where filling the same shape
/// as one path of rectangles takes a quarter of that.
///
/// The union is the stroke's geometry under the canvas defaults (butt caps, miter joins):
/// each maximal run of points on one vertical or horizontal line becomes one rectangle over
/// the run's extent, lengthened by half the width at each end that turns a right angle (the
/// miter's square corner); reversals within a run add nothing (their miter is beyond the
/// limit, so they are bevelled).
pub fn axis_path_rects(points: &[BackendCoord], width: u32) -> Option<Vec<[f64; 4]>> {
    let mut pts: Vec<BackendCoord> = Vec::with_capacity(points.len());
    for &p in points {
        if pts.last() != Some(&p) {
            pts.push(p);
        }
    }
    if width == 0 || pts.windows(2).any(|s| s[0].0 != s[1].0 && s[0].1 != s[1].1) {
        return None;
    }
    let w = f64::from(width);
    let half = w / 2.0;
    let mut rects = Vec::new();
    let mut start = 0;
    while start + 1 < pts.len() {
        let vertical = pts[start].0 == pts[start + 1].0;
        // Position along the run's line, and the line's own position.
        let along = |p: BackendCoord| f64::from(if vertical { p.1 } else { p.0 });
        let across = f64::from(if vertical { pts[start].0 } else { pts[start].1 });
        let mut end = start + 1;
        while end + 1 < pts.len() && along_line(pts[end + 1], pts[start], vertical) {
            end += 1;
        }
        let run = &pts[start..=end];
        let (mut lo, mut hi) =
            run.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &p| (lo.min(along(p)), hi.max(along(p))));
        // A right-angle turn at either end of the run: the miter's square corner.
        let mut corner = |at: BackendCoord, from: BackendCoord| {
            let tip = along(at) + (along(at) - along(from)).signum() * half;
            lo = lo.min(tip);
            hi = hi.max(tip);
        };
        if start > 0 {
            corner(run[0], run[1]);
        }
        if end + 1 < pts.len() {
            corner(run[run.len() - 1], run[run.len() - 2]);
        }
        rects.push(if vertical { [across - half, lo, w, hi - lo] } else { [lo, across - half, hi - lo, w] });
        start = end;
    }
    Some(rects)
}

/// Whether `p` lies on the vertical (or horizontal) line through `on`.
fn along_line(p: BackendCoord, on: BackendCoord, vertical: bool) -> bool {
    if vertical {
        p.0 == on.0
    } else {
        p.1 == on.1
    }
}

/// The window's device pixel ratio (at least 1).
pub fn device_pixel_ratio() -> f64 {
    web_sys::window().map_or(1.0, |w| w.device_pixel_ratio()).max(1.0)
}

/// Sizes `canvas` to `scene` (device pixels) shown at `css_width` × `css_height`, then draws
/// it through the same routine the SVG export uses.
pub fn draw_scene(canvas: &HtmlCanvasElement, scene: &Scene, css_width: f64, css_height: f64) -> Result<(), String> {
    if canvas.width() != scene.width {
        canvas.set_width(scene.width);
    }
    if canvas.height() != scene.height {
        canvas.set_height(scene.height);
    }
    let style = web_sys::HtmlElement::style(canvas);
    let _ = style.set_property("width", &format!("{css_width}px"));
    let _ = style.set_property("height", &format!("{css_height}px"));
    let backend = FastCanvas::new(canvas).ok_or("the canvas has no 2d context")?;
    draw(&backend.into_drawing_area(), scene, 1.0).map_err(|e| e.to_string())
}

/// The content width of the element behind `node`, kept up to date with a ResizeObserver.
pub fn use_width<E>(node: NodeRef<E>) -> ReadSignal<f64>
where
    E: leptos::html::ElementType,
    E::Output: JsCast + Clone + 'static,
{
    let (width, set_width) = signal(0.0f64);
    Effect::new(move |_| {
        let Some(el) = node.get() else { return };
        let el: web_sys::Element = el.unchecked_into();
        set_width.set(f64::from(el.client_width()));
        let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
            if let Some(entry) = entries.get(0).dyn_ref::<web_sys::ResizeObserverEntry>() {
                let w = entry.content_rect().width();
                // After the component is gone its signal is disposed: nothing to resize.
                if width.try_get_untracked().is_some_and(|old| (w - old).abs() >= 1.0) {
                    set_width.set(w);
                }
            }
        });
        if let Ok(observer) = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) {
            observer.observe(&el);
        }
        // The observer lives as long as the page.
        callback.forget();
    });
    width
}
