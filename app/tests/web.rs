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
