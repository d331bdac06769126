//! Playback: a time cursor that plays the schedule filling and draining.
//!
//! The charts are not redrawn while playing (their level of detail stays as drawn): a
//! transparent canvas over each chart veils what has not started yet, outlines the running
//! passes and draws the cursor line, which costs O(devices) per frame whatever the schedule's
//! size. What is done, running and held at the cursor comes from the core's
//! [`bubblescope::render::Cursor`]; this file only displays it.
//!
//! URL keys: `play=1` starts playing, `t=` places the cursor, `speed=` multiplies the pace (a
//! whole schedule takes [`BASE_SECONDS`] at 1), `loop=1` plays again and again.

use std::sync::Arc;

use bubblescope::render::{Cursor, CursorState, GanttGeometry, Theme};
use bubblescope::units::{format_number, Units};
use bubblescope::Analysis;
use leptos::html::Canvas;
use leptos::prelude::*;
use wasm_bindgen::JsCast as _;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

use crate::canvas::device_pixel_ratio;
use crate::state::{now_ms, AppState};

/// Seconds a whole schedule takes to play at speed 1.
pub const BASE_SECONDS: f64 = 8.0;
/// The speeds the menu offers.
const SPEEDS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
/// Accepted `speed=` values.
const SPEED_RANGE: (f64, f64) = (0.05, 64.0);
/// Above this many devices the per-device memory folds behind a summary.
const FOLD_DEVICES: usize = 16;
/// Opacity of the veil over passes not yet started.
const VEIL: f64 = 0.72;

/// What the charts drew last, for the overlays: set by the chart after every redraw.
#[derive(Clone)]
pub struct ChartFrame {
    /// The Gantt chart's layout (CSS pixels).
    pub geometry: GanttGeometry,
    /// The drawn schedules, one per panel.
    pub analyses: Vec<Arc<Analysis>>,
    /// Width of both charts (CSS pixels).
    pub width: f64,
    /// The memory chart's plot band (top, bottom) and height, when it is shown.
    pub memory: Option<(f64, f64, f64)>,
}

/// The playback state, shared by the bar and the overlays.
#[derive(Clone, Copy)]
pub struct Playback {
    /// Cursor time.
    pub time: RwSignal<f64>,
    /// Whether the cursor is shown (playing, paused midway, or placed by `t=`).
    pub active: RwSignal<bool>,
    /// Whether time is advancing.
    pub playing: RwSignal<bool>,
    /// Pace multiplier.
    pub speed: RwSignal<f64>,
    /// Start again at the end.
    pub looping: bool,
    /// What the charts drew.
    pub frame: RwSignal<Option<ChartFrame>>,
    /// One cursor per drawn schedule, rebuilt when the schedules change.
    cursors: StoredValue<(Vec<usize>, Arc<Vec<Cursor>>)>,
    /// Bumped on every start, so a stale animation loop stops.
    generation: StoredValue<u64>,
    state: AppState,
}

impl Playback {
    /// Creates the playback state from the URL's keys and provides it as context.
    pub fn provide(state: AppState) -> Playback {
        let (t, play, speed, looping) = state.link.with_untracked(|l| {
            (
                l.extra("t").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0),
                l.extra("play") == Some("1"),
                l.extra("speed")
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| v.is_finite())
                    .map_or(1.0, |v| v.clamp(SPEED_RANGE.0, SPEED_RANGE.1)),
                l.extra("loop") == Some("1"),
            )
        });
        let pb = Playback {
            time: RwSignal::new(t.unwrap_or(0.0)),
            active: RwSignal::new(t.is_some() || play),
            playing: RwSignal::new(false),
            speed: RwSignal::new(speed),
            looping,
            frame: RwSignal::new(None),
            cursors: StoredValue::new((Vec::new(), Arc::new(Vec::new()))),
            generation: StoredValue::new(0),
            state,
        };
        provide_context(pb);
        if play {
            // Start once the chart has drawn (the end time is known then).
            let started = StoredValue::new(false);
            Effect::new(move |_| {
                if pb.frame.with(Option::is_some) && !started.get_value() {
                    started.set_value(true);
                    pb.play();
                }
            });
        }
        pb
    }

    /// The cursors of the drawn schedules.
    pub fn cursors(&self) -> Arc<Vec<Cursor>> {
        let key: Vec<usize> = self
            .frame
            .with_untracked(|f| f.as_ref().map(|f| f.analyses.iter().map(|a| Arc::as_ptr(a) as usize).collect()))
            .unwrap_or_default();
        if self.cursors.with_value(|(k, _)| *k != key) {
            let built: Vec<Cursor> = self
                .frame
                .with_untracked(|f| {
                    f.as_ref().map(|f| f.analyses.iter().map(|a| Cursor::new(&a.schedule, &a.timeline)).collect())
                })
                .unwrap_or_default();
            self.cursors.set_value((key, Arc::new(built)));
        }
        self.cursors.with_value(|(_, c)| c.clone())
    }

    /// When the last drawn schedule ends.
    pub fn end(&self) -> f64 {
        self.frame
            .with(|f| f.as_ref().map(|f| f.analyses.iter().map(|a| a.timeline.end()).fold(0.0, f64::max)))
            .unwrap_or(0.0)
    }

    /// Starts playing (from the start when the cursor is at the end).
    pub fn play(&self) {
        let end = self.end();
        if end <= 0.0 {
            return;
        }
        if self.time.get_untracked() >= end || !self.active.get_untracked() {
            self.time.set(0.0);
        }
        self.active.set(true);
        self.playing.set(true);
        let generation = self.generation.get_value() + 1;
        self.generation.set_value(generation);
        tick(*self, generation, now_ms());
    }

    /// Stops playing and remembers the cursor in the URL.
    pub fn pause(&self) {
        self.playing.set(false);
        self.remember();
    }

    /// Play or pause.
    pub fn toggle(&self) {
        if self.playing.get_untracked() {
            self.pause();
        } else {
            self.play();
        }
    }

    /// Moves the cursor to `t` (clamped to the schedule).
    pub fn seek(&self, t: f64) {
        let end = self.end();
        self.time.set(if t.is_finite() { t.clamp(0.0, end.max(0.0)) } else { 0.0 });
        self.active.set(true);
    }

    /// Writes `t=` and `speed=` into the link (not while playing: one write per gesture).
    fn remember(&self) {
        let t = self.time.get_untracked();
        let speed = self.speed.get_untracked();
        self.state.link.update(|l| {
            l.set_extra("t", self.active.get_untracked().then(|| format_number(t, 4)));
            l.set_extra("speed", (speed != 1.0).then(|| format_number(speed, 3)));
            l.set_extra("play", None);
        });
    }

    /// Advances the cursor by `ms` of wall time.
    fn advance(&self, ms: f64) {
        let end = self.end();
        if end <= 0.0 {
            return;
        }
        let t = self.time.get_untracked() + ms / 1000.0 * end / BASE_SECONDS * self.speed.get_untracked();
        if t < end {
            self.time.set(t);
        } else if self.looping {
            self.time.set(0.0);
        } else {
            self.time.set(end);
            self.pause();
        }
    }
}

/// One animation frame: advance by the time since the last, then ask for the next.
fn tick(pb: Playback, generation: u64, last: f64) {
    request_animation_frame(move || {
        if !pb.playing.get_untracked() || pb.generation.get_value() != generation {
            return;
        }
        let now = now_ms();
        // A hidden tab pauses frames: do not jump ahead by the whole pause.
        pb.advance((now - last).min(100.0));
        tick(pb, generation, now);
    });
}

/// The controls under the Gantt chart: play/pause, the time scrubber, the speed, and what is
/// happening at the cursor.
#[component]
pub fn PlaybackBar() -> impl IntoView {
    let pb = expect_context::<Playback>();
    let app = expect_context::<AppState>();
    let end = move || pb.end();
    let shown_time = move || if pb.active.get() { pb.time.get() } else { end() };
    let state_at = Memo::new(move |_| {
        let t = shown_time();
        pb.frame.track();
        pb.cursors().first().map(|c| c.at(t))
    });
    let step = move |fraction: f64| {
        pb.seek(shown_time() + end() * fraction);
        if !pb.playing.get_untracked() {
            pb.remember();
        }
    };
    let on_key = move |ev: web_sys::KeyboardEvent| {
        let on_control = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|e| matches!(e.tag_name().as_str(), "BUTTON" | "SELECT" | "INPUT"));
        let key = ev.key();
        match key.as_str() {
            " " | "k" if !(on_control && key == " " && !is_scrubber(&ev)) => pb.toggle(),
            "ArrowLeft" | "ArrowRight" if !is_scrubber(&ev) => {
                let sign = if key == "ArrowLeft" { -1.0 } else { 1.0 };
                step(sign * if ev.shift_key() { 0.1 } else { 0.01 });
            }
            "Home" if !is_scrubber(&ev) => step(-1.0),
            "End" if !is_scrubber(&ev) => step(1.0),
            _ => return,
        }
        ev.prevent_default();
    };
    view! {
        <div class="playback" data-testid="playback" on:keydown=on_key>
            <div class="playback-controls">
                <button type="button" class="button playback-button" data-testid="play-button"
                    aria-label=move || if pb.playing.get() { "Pause" } else { "Play" }
                    title="Play / pause (space)"
                    on:click=move |_| pb.toggle()>
                    {move || if pb.playing.get() { "❚❚ Pause" } else { "▶ Play" }}
                </button>
                <input type="range" class="slider scrubber" data-testid="time-scrubber" aria-label="Cursor time"
                    min="0" prop:max=move || format!("{}", end()) step="any"
                    prop:value=move || format!("{}", shown_time())
                    on:input=move |ev| {
                        if let Ok(v) = event_target_value(&ev).parse::<f64>() {
                            pb.seek(v);
                        }
                    }
                    on:change=move |_| if !pb.playing.get_untracked() { pb.remember() } />
                <label class="sr-only" for="speed">"Speed"</label>
                <select id="speed" class="select compact speed" data-testid="speed-select" title="Playback speed"
                    prop:value=move || format!("{}", pb.speed.get())
                    on:change=move |ev| {
                        if let Ok(v) = event_target_value(&ev).parse::<f64>() {
                            pb.speed.set(v.clamp(SPEED_RANGE.0, SPEED_RANGE.1));
                            if !pb.playing.get_untracked() { pb.remember() }
                        }
                    }>
                    {move || {
                        let current = pb.speed.get();
                        let mut speeds = SPEEDS.to_vec();
                        if !speeds.contains(&current) {
                            speeds.push(current);
                            bubblescope::units::sort::sort_by(&mut speeds, f64::total_cmp);
                        }
                        speeds.into_iter().map(|s| view! { <option value=format!("{s}")>{format!("{}×", format_number(s, 3))}</option> }).collect_view()
                    }}
                </select>
            </div>
            <div class="cursor-stats" data-testid="cursor-stats">
                {move || state_at.get().map(|s| cursor_view(&s, end(), app.units()))}
            </div>
        </div>
    }
}

fn is_scrubber(ev: &web_sys::KeyboardEvent) -> bool {
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| e.get_attribute("data-testid").as_deref() == Some("time-scrubber"))
}

/// The numbers at the cursor.
fn cursor_view(s: &CursorState, end: f64, units: Units) -> impl IntoView {
    let n = |v: f64| units.time(v);
    let m = |v: f64| units.memory(v);
    let idle = s.idle_devices();
    let idle_text = match idle.len() {
        0 => "no device idle".to_string(),
        k if k == s.devices.len() => "all devices idle".to_string(),
        k if k > 8 => format!("{k} of {} devices idle", s.devices.len()),
        _ => format!("idle: {}", idle.iter().map(|d| format!("D{d}")).collect::<Vec<_>>().join(", ")),
    };
    let memory = s
        .devices
        .iter()
        .enumerate()
        .map(|(d, a)| view! { <span class="mem-chip" class:busy=a.running.is_some()>{format!("D{d} {}", m(a.memory))}</span> })
        .collect_view();
    // Many devices: the chips fold behind the highest value, so the bar stays short.
    let memory = if s.devices.len() <= FOLD_DEVICES {
        view! {
            <span class="cursor-memory" data-testid="cursor-memory" title=format!("Activation memory in use per device ({})", units.memory_unit())>
                <span class="muted">"memory "</span>{memory}
            </span>
        }
        .into_any()
    } else {
        let (top, most) = s.devices.iter().enumerate().fold((0, f64::NEG_INFINITY), |best, (d, a)| {
            if a.memory > best.1 {
                (d, a.memory)
            } else {
                best
            }
        });
        view! {
            <details class="cursor-memory-fold" data-testid="cursor-memory">
                <summary>{format!("memory: most on D{top}, {}", m(most))}</summary>
                <span class="cursor-memory">{memory}</span>
            </details>
        }
        .into_any()
    };
    view! {
        <span class="cursor-time" data-testid="cursor-time">{format!("t = {} of {}", n(s.time), n(end))}</span>
        <span data-testid="cursor-done">{format!("{} of {} passes done · {} running", s.passes_done, s.passes_total, s.passes_running)}</span>
        <span data-testid="cursor-idle">{idle_text}</span>
        {memory}
    }
}

/// Which chart an overlay covers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The Gantt chart.
    Gantt,
    /// The memory chart.
    Memory,
}

/// A transparent canvas over a chart showing the cursor.
#[component]
pub fn PlaybackOverlay(layer: Layer) -> impl IntoView {
    let pb = expect_context::<Playback>();
    let state = expect_context::<AppState>();
    let canvas_ref: NodeRef<Canvas> = NodeRef::new();
    // Whether the overlay holds nothing (no cursor drawn since it was last cleared or resized).
    let blank = StoredValue::new(false);
    Effect::new(move |_| {
        let started = now_ms();
        let t = pb.time.get();
        let active = pb.active.get();
        let theme = state.theme.get().theme();
        let Some(canvas) = canvas_ref.get() else { return };
        pb.frame.with(|frame| {
            let Some(frame) = frame else { return };
            let height = match layer {
                Layer::Gantt => frame.geometry.height,
                Layer::Memory => match frame.memory {
                    Some((_, _, h)) => h,
                    None => return,
                },
            };
            // Without a cursor an empty overlay is left alone on every chart redraw: clearing
            // it again would make the browser re-rasterise and composite a blank canvas.
            if !active && blank.get_value() && sized(&canvas, frame.width, height) {
                return;
            }
            let Some(ctx) = prepare(&canvas, frame.width, height) else { return };
            blank.set_value(!active);
            if !active {
                return;
            }
            let cursors = pb.cursors();
            match layer {
                Layer::Gantt => draw_gantt_overlay(&ctx, frame, &cursors, t, &theme),
                Layer::Memory => {
                    if let Some((top, bottom, _)) = frame.memory {
                        draw_band(&ctx, frame, t, top, bottom, &theme);
                    }
                }
            }
        });
        let _ = canvas.set_attribute("data-frame-ms", &format!("{:.2}", now_ms() - started));
    });
    let class = match layer {
        Layer::Gantt => "playback-overlay gantt-overlay",
        Layer::Memory => "playback-overlay memory-overlay",
    };
    let testid = match layer {
        Layer::Gantt => "gantt-overlay",
        Layer::Memory => "memory-overlay",
    };
    view! { <canvas class=class data-testid=testid node_ref=canvas_ref aria-hidden="true"></canvas> }
}

/// Whether the overlay's backing store is sized for a chart of `width` × `height` CSS pixels.
fn sized(canvas: &HtmlCanvasElement, width: f64, height: f64) -> bool {
    let dpr = device_pixel_ratio();
    canvas.width() == (width * dpr).round() as u32 && canvas.height() == (height * dpr).round() as u32
}

/// Sizes the overlay like its chart and clears it; the context draws in CSS pixels.
fn prepare(canvas: &HtmlCanvasElement, width: f64, height: f64) -> Option<CanvasRenderingContext2d> {
    let dpr = device_pixel_ratio();
    let (w, h) = ((width * dpr).round() as u32, (height * dpr).round() as u32);
    if canvas.width() != w {
        canvas.set_width(w);
    }
    if canvas.height() != h {
        canvas.set_height(h);
    }
    let style = web_sys::HtmlElement::style(canvas);
    let _ = style.set_property("width", &format!("{width}px"));
    let _ = style.set_property("height", &format!("{height}px"));
    let ctx: CanvasRenderingContext2d = canvas.get_context("2d").ok()??.dyn_into().ok()?;
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    ctx.clear_rect(0.0, 0.0, f64::from(w), f64::from(h));
    let _ = ctx.set_transform(dpr, 0.0, 0.0, dpr, 0.0, 0.0);
    Some(ctx)
}

fn rgba(c: bubblescope::render::Rgb, alpha: f64) -> String {
    format!("rgba({},{},{},{alpha})", c.0, c.1, c.2)
}

/// Veils the future in the band `top..bottom` and draws the cursor line through it.
fn draw_band(ctx: &CanvasRenderingContext2d, frame: &ChartFrame, t: f64, top: f64, bottom: f64, theme: &Theme) {
    let axis = frame.geometry.axis;
    let x = axis.x(t).clamp(axis.x0, axis.x1);
    ctx.set_fill_style_str(&rgba(theme.background, VEIL));
    ctx.fill_rect(x, top, axis.x1 - x, bottom - top);
    ctx.set_fill_style_str(&rgba(theme.text, 1.0));
    ctx.fill_rect(x - 1.0, top - 2.0, 2.0, bottom - top + 4.0);
}

/// The Gantt overlay: the veil and cursor over every panel, the running passes outlined.
fn draw_gantt_overlay(ctx: &CanvasRenderingContext2d, frame: &ChartFrame, cursors: &[Cursor], t: f64, theme: &Theme) {
    let g = &frame.geometry;
    let axis = g.axis;
    for p in &g.panels {
        let bottom = p.rows_top + f64::from(p.devices) * g.row_pitch - (g.row_pitch - g.row_height);
        draw_band(ctx, frame, t, p.rows_top, bottom, theme);
    }
    ctx.set_stroke_style_str(&rgba(theme.outline, 1.0));
    ctx.set_line_width(2.0);
    for ((p, cursor), a) in g.panels.iter().zip(cursors).zip(&frame.analyses) {
        let s = cursor.at(t);
        for (d, at) in s.devices.iter().enumerate() {
            let Some(i) = at.running else { continue };
            let Some(op) = a.timeline.devices.get(d).and_then(|dt| dt.ops.get(i)) else { continue };
            let (x0, x1) = (axis.x(op.start).max(axis.x0), axis.x(op.end).min(axis.x1));
            if x1 < x0 {
                continue;
            }
            let top = p.rows_top + d as f64 * g.row_pitch;
            ctx.stroke_rect(x0 + 1.0, top + 1.0, (x1 - x0 - 2.0).max(1.0), (g.row_height - 2.0).max(1.0));
        }
    }
}
