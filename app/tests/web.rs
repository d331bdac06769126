//! The app in a real browser (headless Chromium through wasm-bindgen-test-runner).

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{CanvasRenderingContext2d, Event, EventInit, HtmlCanvasElement, HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

/// Lets effects, layout and the ResizeObserver run.
async fn settle(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let _ = web_sys::window().unwrap().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

fn by_testid<T: JsCast>(id: &str) -> T {
    document()
        .query_selector(&format!("[data-testid=\"{id}\"]"))
        .unwrap()
        .unwrap_or_else(|| panic!("no element with data-testid={id}"))
        .unchecked_into()
}

fn text(id: &str) -> String {
    by_testid::<HtmlElement>(id).text_content().unwrap_or_default().trim().to_string()
}

/// A digest of the canvas pixels, to tell one drawing from another.
fn canvas_digest(canvas: &HtmlCanvasElement) -> (u32, u32, u64) {
    let ctx: CanvasRenderingContext2d = canvas.get_context("2d").unwrap().unwrap().unchecked_into();
    let (w, h) = (canvas.width(), canvas.height());
    let data = ctx.get_image_data(0.0, 0.0, f64::from(w), f64::from(h)).unwrap().data().0;
    let sum =
        data.iter().enumerate().fold(0u64, |acc, (i, v)| acc.wrapping_mul(31).wrapping_add(u64::from(*v) ^ i as u64));
    (w, h, sum)
}

fn input(el: &HtmlInputElement, value: &str) {
    el.set_value(value);
    let init = EventInit::new();
    init.set_bubbles(true);
    el.dispatch_event(&Event::new_with_event_init_dict("input", &init).unwrap()).unwrap();
}

/// Mounts the app at the default settings, whatever earlier tests left in the address bar.
async fn mount() -> leptos::mount::UnmountHandle<impl leptos::tachys::view::Mountable> {
    let history = web_sys::window().unwrap().history().unwrap();
    history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some("?")).unwrap();
    let host = document().create_element("div").unwrap();
    host.set_attribute("style", "width: 1200px").unwrap();
    document().body().unwrap().append_child(&host).unwrap();
    let handle = leptos::mount::mount_to(host.unchecked_into(), bubblescope_app::App);
    settle(300).await;
    handle
}

#[wasm_bindgen_test]
async fn moving_the_devices_slider_redraws_the_chart() {
    let _app = mount().await;
    assert_eq!(text("stat-cost"), "33");
    let canvas: HtmlCanvasElement = by_testid("gantt-canvas");
    let before = canvas_digest(&canvas);
    assert!(before.0 > 100, "the canvas was never sized: {before:?}");

    input(&by_testid::<HtmlInputElement>("devices-slider"), "6");
    settle(200).await;
    assert_eq!(text("stat-cost"), "39", "1F1B P=6 M=8: (M+P−1)(F+B+W)");
    let after = canvas_digest(&canvas);
    assert_ne!(before, after, "the chart did not change after the slider moved");
}

#[wasm_bindgen_test]
async fn an_invalid_value_shows_an_error_and_keeps_the_last_chart() {
    let _app = mount().await;
    let select: web_sys::HtmlSelectElement = by_testid("schedule-select");
    select.set_value("dualpipe");
    let init = EventInit::new();
    init.set_bubbles(true);
    select.dispatch_event(&Event::new_with_event_init_dict("change", &init).unwrap()).unwrap();
    settle(200).await;
    let canvas: HtmlCanvasElement = by_testid("gantt-canvas");
    let good = canvas_digest(&canvas);

    input(&by_testid::<HtmlInputElement>("devices-input"), "5");
    settle(200).await;
    let error = document().get_element_by_id("devices-error").unwrap();
    let message = error.text_content().unwrap_or_default();
    assert!(message.contains("even number of devices"), "no devices error: {message:?}");
    assert!(!error.has_attribute("hidden"));
    assert_eq!(canvas_digest(&canvas), good, "the last good chart must stay");
}

/// How many computations (generate, validate, simulate) have run, from the page.
fn computations() -> u64 {
    document()
        .query_selector(".app")
        .unwrap()
        .expect("the app is mounted")
        .get_attribute("data-computations")
        .and_then(|v| v.parse().ok())
        .expect("the app exposes data-computations")
}

fn change(el: &web_sys::HtmlElement) {
    let init = EventInit::new();
    init.set_bubbles(true);
    el.dispatch_event(&Event::new_with_event_init_dict("change", &init).unwrap()).unwrap();
}

#[wasm_bindgen_test]
async fn theme_and_bubble_measure_change_the_view_without_recomputing() {
    let _app = mount().await;
    let before = computations();
    by_testid::<HtmlElement>("theme-toggle").click();
    settle(100).await;
    let measure: web_sys::HtmlSelectElement = by_testid("bubble-measure");
    measure.set_value("ideal");
    change(&measure);
    settle(100).await;
    assert_eq!(text("stat-bubble-rate"), "0.375", "1F1B P=4 M=8 over ideal: 9/24");
    assert_eq!(computations(), before, "a view preference re-ran the schedules");
    let zoom_in: HtmlElement =
        document().query_selector("button[aria-label='Zoom in']").unwrap().expect("a zoom button").unchecked_into();
    zoom_in.click();
    settle(100).await;
    let link = by_testid::<HtmlInputElement>("permalink").value();
    assert!(link.contains("theme=dark") && link.contains("measure=ideal") && link.contains("zoom="), "{link}");
    assert_eq!(computations(), before, "zooming re-ran the schedules");
    input(&by_testid::<HtmlInputElement>("devices-slider"), "6");
    settle(200).await;
    assert!(computations() > before, "a setting change must recompute");
}

#[wasm_bindgen_test]
async fn family_option_controls_show_the_familys_defaults() {
    let _app = mount().await;
    let select: web_sys::HtmlSelectElement = by_testid("schedule-select");
    select.set_value("hanayo");
    change(&select);
    settle(200).await;
    assert_eq!(by_testid::<HtmlInputElement>("waves-input").value(), "2", "Hanayo's default is 2 waves");
    select.set_value("interleaved-1f1b");
    change(&select);
    settle(200).await;
    assert_eq!(by_testid::<HtmlInputElement>("chunks-input").value(), "2");
    assert_eq!(by_testid::<HtmlInputElement>("group-input").value(), "4", "group defaults to the devices");
}

/// A canvas of `w` × `h` pixels, not in the page.
fn offscreen(w: u32, h: u32) -> HtmlCanvasElement {
    let c: HtmlCanvasElement = document().create_element("canvas").unwrap().unchecked_into();
    c.set_width(w);
    c.set_height(h);
    c
}

fn pixels(canvas: &HtmlCanvasElement) -> Vec<u8> {
    let ctx: CanvasRenderingContext2d = canvas.get_context("2d").unwrap().unwrap().unchecked_into();
    ctx.get_image_data(0.0, 0.0, f64::from(canvas.width()), f64::from(canvas.height())).unwrap().data().0
}

/// Draws a one-line scene through the app's canvas backend and through plotters-canvas' own
/// (which strokes every line); returns both pictures.
fn line_both_ways(points: &[(f64, f64)], width: f64) -> (Vec<u8>, Vec<u8>) {
    use bubblescope::render::{draw, Item, Rgb, Scene};
    use plotters::prelude::IntoDrawingArea as _;
    let mut scene = Scene::new(120, 100, Rgb(255, 255, 255), "sans-serif");
    scene.items.push(Item::Line { points: points.to_vec(), color: Rgb(20, 100, 200), width });
    let ours = offscreen(120, 100);
    bubblescope_app::canvas::draw_scene(&ours, &scene, 120.0, 100.0).unwrap();
    let stroked = offscreen(120, 100);
    let backend = plotters_canvas::CanvasBackend::with_canvas_object(stroked.clone()).unwrap();
    draw(&backend.into_drawing_area(), &scene, 1.0).unwrap();
    (pixels(&ours), pixels(&stroked))
}

/// A step line like the memory chart's: vertical runs with reversals in one pixel column,
/// right-angle turns both ways, a repeated point.
const STEPS: [(f64, f64); 14] = [
    (10.0, 50.0),
    (10.0, 20.0),
    (10.0, 70.0),
    (10.0, 40.0),
    (14.0, 40.0),
    (14.0, 40.0),
    (14.0, 60.0),
    (30.0, 60.0),
    (30.0, 10.0),
    (30.0, 90.0),
    (30.0, 30.0),
    (80.0, 30.0),
    (80.0, 80.0),
    (110.0, 80.0),
];

#[wasm_bindgen_test]
fn step_lines_filled_as_rectangles_paint_what_a_stroke_paints() {
    // Two pixels wide (the memory curves at a pixel ratio of 1): the same pixels exactly.
    let (ours, stroked) = line_both_ways(&STEPS, 1.5);
    assert!(ours.chunks(4).any(|p| p[0] == 20 && p[1] == 100), "the line was not drawn");
    let differing = ours.chunks(4).zip(stroked.chunks(4)).filter(|(a, b)| a != b).count();
    assert_eq!(differing, 0, "pixels differing from the stroked line");
    // Three pixels wide (a ratio of 2): the same outline, anti-aliased once; the stroker's own
    // rounding leaves a few edge pixels apart.
    let (ours, stroked) = line_both_ways(&STEPS, 3.0);
    let differing = ours.chunks(4).zip(stroked.chunks(4)).filter(|(a, b)| a != b).count();
    let inked = stroked.chunks(4).filter(|p| p[0] != 255).count();
    assert!(differing * 50 < inked, "{differing} of {inked} inked pixels differ");
}

#[wasm_bindgen_test]
fn lines_that_are_not_step_lines_are_still_stroked() {
    use bubblescope_app::canvas::axis_path_rects;
    assert_eq!(axis_path_rects(&[(0, 0), (10, 10)], 2), None, "a diagonal");
    assert_eq!(axis_path_rects(&[(5, 5), (5, 5)], 2), Some(Vec::new()), "a single point paints nothing");
    // A right-angle turn: the corner square is filled (the miter), the free ends are butt.
    assert_eq!(
        axis_path_rects(&[(0, 10), (20, 10), (20, 30)], 2),
        Some(vec![[0.0, 9.0, 21.0, 2.0], [19.0, 9.0, 2.0, 21.0]])
    );
    // Hairlines and a diagonal go through the stroke: the same pixels as before.
    for (points, width) in [(vec![(5.0, 5.0), (100.0, 5.0)], 1.0), (vec![(5.0, 5.0), (90.0, 60.0)], 2.0)] {
        let (ours, stroked) = line_both_ways(&points, width);
        assert!(ours == stroked, "{points:?} at width {width}");
    }
}
