//! The engine module: in the playground's background worker it serves the page's requests
//! ([`bubblescope_app::engine::serve`]); loaded on a page whose workers cannot start, it does
//! nothing until the page calls its `answer`.

fn main() {
    console_error_panic_hook::set_once();
    if bubblescope_app::engine::in_worker() {
        bubblescope_app::engine::serve();
    }
}
