//! Mounts the playground; in the background worker (no window), serves computations instead.

fn main() {
    console_error_panic_hook::set_once();
    if bubblescope_app::engine::in_worker() {
        bubblescope_app::engine::serve();
    } else {
        leptos::mount::mount_to_body(bubblescope_app::App);
    }
}
