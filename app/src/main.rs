//! The playground's page: mounts the app. Its computations beyond small schedules run in the
//! engine module (`src/bin/engine.rs`).

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(bubblescope_app::App);
}
