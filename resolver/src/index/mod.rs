//! Simple-index pages: the "Simple repository API" that pip and uv read, in both its forms,
//! [PEP 503] HTML (as PyPI and download.pytorch.org write it) and [PEP 691] JSON, parsed into
//! one model ([`ProjectPage`], [`ProjectList`]) and rendered back without losing an attribute.
//!
//! - [`model`]: the page model, and resolving a file's link against the page URL;
//! - [`hashes`]: [`Hashes`], a file's small hash name to digest table;
//! - [`html`]: a small byte scanner for PEP 503 pages, and the HTML renderer;
//! - [`json`]: PEP 691 pages through serde, and the JSON renderer;
//! - [`linked`]: [`LinkedPage`], borrowed files with links of their own, rendered as they are;
//! - [`error`]: [`IndexParseError`] and the size limits.
//!
//! Choosing between the formats (`Accept` negotiation) is the proxy's job, not this module's.
//!
//! [PEP 503]: https://peps.python.org/pep-0503/
//! [PEP 691]: https://peps.python.org/pep-0691/

pub mod error;
pub mod hashes;
pub mod html;
pub mod json;
pub mod linked;
pub mod model;

pub use error::{IndexParseError, MAX_LINKS, MAX_PAGE_BYTES};
pub use hashes::Hashes;
pub use html::{
    HtmlTail, ProjectHtmlReader, parse_project_html, parse_project_list_html, render_linked_html,
    render_project_html, render_project_list_html,
};
pub use json::{
    parse_project_json, parse_project_list_json, render_linked_json, render_project_json,
    render_project_list_json,
};
pub use linked::{LinkedPage, offers_derived_metadata};
pub use model::{
    CoreMetadata, DroppedFile, IndexFile, Meta, ProjectLink, ProjectList, ProjectPage,
    ProjectStatus, Yanked, normalize_project_name, resolve_url,
};
