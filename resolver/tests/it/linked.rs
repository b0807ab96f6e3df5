//! A page of borrowed files with links of their own renders as the copy it stands for.

use wheelgate_resolver::index::{
    LinkedPage, ProjectPage, parse_project_html, parse_project_json, render_linked_html,
    render_linked_json, render_project_html, render_project_json,
};

/// Every attribute a file can carry in either format, a status, tracks and fileless versions.
const JSON_PAGE: &str = r#"{
  "meta": {"api-version": "1.4", "_last-serial": 31234567, "tracks": ["https://other.example/simple/torch/"],
           "alternate-locations": ["https://mirror.example/simple/torch/"]},
  "name": "torch",
  "project-status": {"status": "deprecated", "reason": "moved <elsewhere> & \"on\""},
  "versions": ["0.6c1", "2.9.0", "2.10.0"],
  "files": [
    {"filename": "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
     "url": "https://files.example/packages/aa/torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
     "hashes": {"sha256": "aa", "md5": "bb"}, "requires-python": ">=3.9.0",
     "core-metadata": {"sha256": "cc"}, "gpg-sig": false, "yanked": "broken \"wheel\"",
     "size": 12, "upload-time": "2025-10-15T17:12:00.123456Z",
     "provenance": "https://files.example/provenance"},
    {"filename": "torch-2.10.0.tar.gz", "url": "../../packages/torch-2.10.0.tar.gz",
     "hashes": {}, "yanked": true, "size": 7, "core-metadata": true}
  ]
}"#;

/// `page` with each file linked to `/files/torch/<name>`, and the copy it stands for.
fn linked_and_copied(page: &ProjectPage) -> (LinkedPage<'_>, ProjectPage) {
    let mut linked = LinkedPage::new(
        "torch".to_string(),
        page.versions.clone(),
        page.meta.clone(),
        page.status.clone(),
    );
    linked.reserve(page.files.len(), 80);
    for file in page.files.iter().rev() {
        linked.push(file, |link| {
            link.push_str("/files/torch/");
            link.push_str(&file.filename.replace('+', "%2B"));
        });
    }
    let copied = linked.to_page();
    (linked, copied)
}

fn assert_renders_as_its_copy(page: &ProjectPage) {
    let (linked, copied) = linked_and_copied(page);
    assert_eq!(linked.len(), page.files.len());
    assert_eq!(copied.files.len(), page.files.len());
    // In the order pushed: the page's, reversed.
    for (((file, link), copy), original) in linked
        .files()
        .zip(&copied.files)
        .zip(page.files.iter().rev())
    {
        assert!(std::ptr::eq(file, original));
        assert_eq!(copy.url, link);
        assert_eq!(copy.filename, file.filename);
        assert_eq!(
            link,
            format!("/files/torch/{}", file.filename.replace('+', "%2B"))
        );
    }
    assert_eq!(render_linked_json(&linked), render_project_json(&copied));
    assert_eq!(render_linked_html(&linked), render_project_html(&copied));
}

#[test]
fn a_linked_page_renders_as_its_copy_with_every_attribute() {
    let page = parse_project_json(JSON_PAGE).unwrap();
    assert_renders_as_its_copy(&page);
    let (linked, _) = linked_and_copied(&page);
    let json = render_linked_json(&linked);
    assert!(json.contains(r#""_last-serial":31234567"#), "{json}");
    assert!(
        json.contains(r#""url":"/files/torch/torch-2.10.0.tar.gz""#),
        "{json}"
    );
}

#[test]
fn the_real_size_torch_page_linked_renders_as_its_copy() {
    let page = parse_project_html(&wheelgate_testdata::torch_page_html()).unwrap();
    assert_renders_as_its_copy(&page);
}

#[test]
fn a_linked_page_without_files_renders_as_an_empty_page() {
    let page = parse_project_json(JSON_PAGE).unwrap();
    let linked = LinkedPage::new("torch".to_string(), Vec::new(), page.meta.clone(), None);
    assert!(linked.is_empty());
    assert_eq!(
        render_linked_json(&linked),
        render_project_json(&linked.to_page())
    );
    assert_eq!(
        render_linked_html(&linked),
        render_project_html(&linked.to_page())
    );
}

/// Files the page holds itself follow the borrowed ones, linked by their own `url`, and render
/// as the copy holds them.
#[test]
fn owned_files_follow_the_borrowed_ones_in_every_rendering() {
    let page = parse_project_json(JSON_PAGE).unwrap();
    let (mut linked, _) = linked_and_copied(&page);
    let mut alias = page.files[0].clone();
    alias.filename = "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl".to_string();
    alias.url = "/files/torch/p/cpu/torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl".to_string();
    alias.hashes = wheelgate_resolver::index::Hashes::new();
    linked.push_owned(alias.clone());
    assert_eq!(linked.len(), page.files.len() + 1);
    assert_eq!(linked.files().len(), page.files.len() + 1);
    let (last, link) = linked.files().last().unwrap();
    assert_eq!(last, &alias);
    assert_eq!(link, alias.url);
    let copied = linked.to_page();
    assert_eq!(copied.files.last(), Some(&alias));
    assert_eq!(render_linked_json(&linked), render_project_json(&copied));
    assert_eq!(render_linked_html(&linked), render_project_html(&copied));
}
