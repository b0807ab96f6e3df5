//! The HTTP server: one function builds the app, used by `main` and by tests.

pub mod auth;
pub mod binding;
pub mod build_info;
pub mod client_addr;
pub mod derived_metadata;
pub mod error;
pub mod explain;
pub mod explanation;
pub mod file_response;
pub mod files;
pub mod header_list;
pub mod html;
pub mod installer_config;
pub mod limits;
pub mod listener;
pub mod listing;
pub mod lookup;
pub mod negotiate;
pub mod observe;
pub mod offline;
pub mod ops;
pub mod plain_version;
pub mod precompressed;
pub mod ranges;
pub mod rendered;
pub mod rewrite;
pub mod route;
pub mod serve;
pub mod served;
pub mod simple;
pub mod state;
pub mod status;
pub mod targets;
pub mod useragent;
pub mod variants;

pub use state::AppState;

use axum::Router;

/// The whole application: simple-index routes, files, operations. The request limits
/// (`limits.rs`) and request metrics (`observe.rs`) are the listener's, around it
/// (`listener.rs`, through `serve::serve_until` or `wheelgate serve`), not the router's.
pub fn app(state: AppState) -> Router {
    let routes = Router::new()
        .merge(simple::routes())
        .merge(explain::routes())
        .merge(files::routes())
        .merge(binding::files::routes())
        .merge(variants::routes())
        .merge(plain_version::routes())
        .merge(ops::routes())
        .merge(observe::routes())
        .merge(status::routes());
    // Without credentials configured nothing is checked, so the layer is left out rather than
    // run to let every request through (a middleware layer is a few per cent of a warm page's
    // CPU).
    let routes = if state.config.auth.enabled() {
        routes.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require,
        ))
    } else {
        routes
    };
    routes.with_state(state)
}
