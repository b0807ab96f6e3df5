//! Which HTTP client and which headers a request to an upstream URL uses, and redirects across
//! origins: the one place that decides where credentials go.
//!
//! Origins with `[upstreams.*]` access get their own client (the system's roots plus the
//! section's CA bundle) and their headers. Every request names the page it is made for (a
//! page fetch its own URL, a file the page that lists it): only the source whose origins hold
//! that page lends its access, and only to its own origins. A file another source's page links
//! to on a private origin is fetched with no access at all. Those clients follow redirects only
//! within the origin; a redirect to another origin (Artifactory sending a download to a
//! presigned bucket URL) comes back here and is followed with the same source's access if the
//! new origin is one of its own, and with none otherwise. reqwest
//! alone would strip `Authorization` on such a redirect but forward every other header
//! (`X-JFrog-Art-Api`) to the new host. Every other URL goes through the default client, which
//! carries none of these headers and follows redirects itself.

use std::time::Duration;

use reqwest::header::{HeaderMap, LOCATION};
use reqwest::redirect::{Attempt, Policy};
use reqwest::{Method, Response, StatusCode, Url};

use super::access::{OriginAccess, origin_of};
use super::client::{ClientSettings, UpstreamError};

/// Redirects followed per request, across origins and within them (reqwest's own default).
const MAX_REDIRECTS: usize = 10;

/// The default client and one client per origin with access settings.
#[derive(Debug, Clone)]
pub(super) struct Transport {
    default: reqwest::Client,
    scoped: Vec<Scoped>,
}

#[derive(Debug, Clone)]
struct Scoped {
    access: OriginAccess,
    client: reqwest::Client,
}

impl Transport {
    pub(super) fn build(settings: &ClientSettings) -> Result<Transport, UpstreamError> {
        let default = builder(settings).build().map_err(UpstreamError::Build)?;
        let scoped = settings
            .access
            .iter()
            .map(|access| {
                let client = builder(settings)
                    .redirect(Policy::custom(same_origin_only))
                    .tls_certs_merge(access.roots.iter().cloned())
                    .build()
                    .map_err(|source| UpstreamError::BuildScoped {
                        section: access.section.clone(),
                        source,
                    })?;
                Ok(Scoped {
                    access: access.clone(),
                    client,
                })
            })
            .collect::<Result<_, UpstreamError>>()?;
        Ok(Transport { default, scoped })
    }

    /// The client without any upstream's access.
    pub(super) fn default_client(&self) -> &reqwest::Client {
        &self.default
    }

    /// A GET of `url` with `headers`, made for the page at `for_page` (`None`: for no source),
    /// following redirects; see [`Transport::send`].
    pub(super) async fn get(
        &self,
        url: &str,
        headers: &HeaderMap,
        for_page: Option<&str>,
    ) -> Result<Response, reqwest::Error> {
        self.send(Method::GET, url, headers, for_page).await
    }

    /// A request of `method` (GET, or HEAD for a size) for the page at `for_page`: each hop
    /// carries the access of the source whose origins hold that page, when the hop's origin is
    /// one of that source's, and no access otherwise (`None`: never any).
    pub(super) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        for_page: Option<&str>,
    ) -> Result<Response, reqwest::Error> {
        let requester = for_page
            .and_then(|page| Url::parse(page).ok())
            .and_then(|page| self.scoped_for(&page));
        let mut current = url.to_string();
        let mut hops = 0;
        loop {
            let parsed = Url::parse(&current).ok();
            let Some(scoped) = requester.filter(|scoped| {
                parsed
                    .as_ref()
                    .is_some_and(|url| scoped.access.applies_to(url))
            }) else {
                // No access of ours to leak: reqwest follows redirects (and strips a URL's own
                // `user:password@` credentials when one leaves the host).
                return self
                    .default
                    .request(method, &current)
                    .headers(headers.clone())
                    .send()
                    .await;
            };
            let mut with_access = headers.clone();
            for (name, value) in &scoped.access.headers {
                with_access.insert(name, value.clone());
            }
            let response = scoped
                .client
                .request(method.clone(), &current)
                .headers(with_access)
                .send()
                .await?;
            match next_hop(&response) {
                Some(next) if hops < MAX_REDIRECTS => {
                    hops += 1;
                    current = next;
                }
                _ => return Ok(response),
            }
        }
    }

    /// The access settings in use, one per configured upstream.
    pub(super) fn access(&self) -> impl Iterator<Item = &OriginAccess> {
        self.scoped.iter().map(|scoped| &scoped.access)
    }

    /// Whether requests to `url` made for its own source carry a private upstream's access.
    pub(super) fn has_access(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|url| self.scoped_for(&url).is_some())
    }

    /// The section whose access requests made for the page at `for_page` may carry.
    pub(super) fn section_for(&self, for_page: Option<&str>) -> Option<&str> {
        let page = Url::parse(for_page?).ok()?;
        self.scoped_for(&page)
            .map(|scoped| scoped.access.section.as_str())
    }

    fn scoped_for(&self, url: &Url) -> Option<&Scoped> {
        self.scoped
            .iter()
            .find(|scoped| scoped.access.applies_to(url))
    }
}

fn builder(settings: &ClientSettings) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .read_timeout(settings.read_timeout)
        .user_agent(settings.user_agent.clone())
        .pool_idle_timeout(Duration::from_secs(90))
        // A connection per request in flight. Over HTTP/2 every download from one file host
        // shared one connection: one TCP window, and one task decrypting and unframing them all.
        // Five large wheels (2.1 GB) fetched cold through the proxy from the registry took 6.8
        // CPU-seconds and 7.4 s that way, 5.9 and 5.5 s over HTTP/1.1 (curl, 2-core machine;
        // issue 40 item 8, README's Benchmarks). Installers do the same through the proxy, one
        // connection per download.
        .http1_only()
}

/// The redirect policy of a client with access: within its origin only (the headers it carries
/// are meant for that origin); a redirect elsewhere is returned to [`Transport::get`].
fn same_origin_only(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let same = attempt
        .previous()
        .last()
        .is_some_and(|previous| origin_of(previous) == origin_of(attempt.url()));
    if attempt.previous().len() > MAX_REDIRECTS {
        attempt.error("too many redirects")
    } else if same {
        attempt.follow()
    } else {
        attempt.stop()
    }
}

/// The absolute http(s) URL a redirect response points at.
fn next_hop(response: &Response) -> Option<String> {
    let redirect = matches!(
        response.status(),
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    );
    if !redirect {
        return None;
    }
    let location = response.headers().get(LOCATION)?.to_str().ok()?;
    let next = response.url().join(location).ok()?;
    matches!(next.scheme(), "http" | "https").then(|| next.to_string())
}
