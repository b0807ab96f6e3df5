//! The wheel-variant block of the status page: for torch, torchvision and torchaudio, when the
//! cached upstream page lists variant wheels (PEP 825), the variant the server's machine gets
//! for the newest such version, and why (the judgements, the release train's decision, every
//! other label's reason). Read from what is cached only, never fetched: the status page must
//! not wait on an upstream. Empty when no cached page lists variants.

use std::fmt::Write as _;

use wheelgate_resolver::select::FileRef;
use wheelgate_resolver::variants::lists_variants;

use super::super::html::escape;
use super::super::offline::offered;
use super::super::state::AppState;
use super::metadata::has_variant_label_markers;
use super::{DERIVED_FOR_MARKERS, read_variants_files};

/// The projects the block covers: torch's release train, as the status page's builds table.
const PROJECTS: [&str; 3] = ["torch", "torchvision", "torchaudio"];

/// The block's HTML, or an empty string.
pub async fn section(state: &AppState) -> String {
    let machine = &state.default_machine;
    let policy = &state.config.policy;
    let mut rows = String::new();
    // Variant wheels are the PyTorch index's (its `/whl/variant/` layout): none without one.
    let Some(pytorch) = state.sources.pytorch() else {
        return String::new();
    };
    for project in PROJECTS {
        let url = pytorch.page_url(project, None);
        let Some(cached) = state.index.peek(&url).await else {
            continue;
        };
        let page = offered(
            &cached.page,
            &cached.url,
            &state.files,
            state.config.offline,
        );
        let refs: Vec<FileRef<'_>> = page.files.iter().map(FileRef::from).collect();
        if !lists_variants(&refs) {
            continue;
        }
        // Cached variants files only (`offline`): a missing one reads as unreadable, and the
        // choice by labels says so in its notes, as the page itself would until it is read.
        let parsed = read_variants_files(
            &state.files,
            &state.client,
            true,
            &page,
            crate::listing::Listing::Page(&cached.url),
        )
        .await;
        drop(refs);
        let choice =
            super::choose_off_the_runtime(state, machine, policy, project, &page, parsed).await;
        let Some(version) = choice.versions.first() else {
            continue;
        };
        let chosen = version.picks.first().map_or_else(
            || "<span class=\"bad\">none usable</span>".to_string(),
            |pick| format!("<span class=\"chosen\">{}</span>", escape(&pick.label)),
        );
        let mut reasons = String::from("<ul class=\"reasons\">");
        for note in &version.notes {
            let _ = write!(reasons, "<li>{}</li>", escape(note));
        }
        if let Some(first) = version.picks.first()
            && has_variant_label_markers(
                state,
                &page,
                crate::listing::Listing::Page(&cached.url),
                first.index,
                true,
            )
            .await
                == Some(true)
        {
            let _ = write!(reasons, "<li>{}</li>", escape(DERIVED_FOR_MARKERS));
        }
        for (label, why) in &version.rejected {
            let _ = write!(
                reasons,
                "<li><code>{}</code>: {}</li>",
                escape(label),
                escape(why)
            );
        }
        reasons.push_str("</ul>");
        let _ = write!(
            rows,
            "<tr><td><code>{}</code> {}</td><td>{chosen}</td><td>{reasons}</td></tr>",
            escape(project),
            escape(&version.version.to_string())
        );
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "<h2 id=\"variants\">Its wheel variants (PEP 825)</h2>\
         <p>The upstream lists variant wheels: plain installers get the variant below under the \
         plain wheel filename (newest variant version on the cached page).</p>\
         <table><thead><tr><th>Project</th><th>Variant</th><th>Why, and why not the others</th>\
         </tr></thead>{rows}</table>\n"
    )
}
