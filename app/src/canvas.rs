//! Canvas helpers: sizing to the device pixel ratio, element width, and drawing a scene.

use bubblescope::render::{draw, Scene};
use leptos::prelude::*;
use plotters::prelude::IntoDrawingArea as _;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

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
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("the canvas has no 2d context")?;
    draw(&backend.into_drawing_area(), scene, 1.0)
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
                if (w - width.get_untracked()).abs() >= 1.0 {
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
