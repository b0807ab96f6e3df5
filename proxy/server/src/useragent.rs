//! The client's OS and CPU from its User-Agent: pip and uv append a JSON object describing the
//! platform, which refines the server's own machine under `/simple/` (a Mac or aarch64 client is
//! never served Linux x86_64 CUDA builds). A machine named on purpose (a `/m/<token>/` URL's, a
//! `/b/<backend>/` prefix's, a `[[networks]]` rule's) is never refined: which routes are is
//! `route::Target::refined_by_user_agent`.

use serde::Deserialize;
use wheelgate_resolver::{Arch, DottedVersion, Machine, Os, Platform};

#[derive(Deserialize)]
struct Details {
    cpu: Option<String>,
    system: Option<System>,
    distro: Option<Distro>,
}

#[derive(Deserialize)]
struct System {
    name: Option<String>,
}

#[derive(Deserialize)]
struct Distro {
    libc: Option<Libc>,
}

#[derive(Deserialize)]
struct Libc {
    lib: Option<String>,
    version: Option<String>,
}

/// The platform facts a User-Agent carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientPlatform {
    pub platform: Platform,
    pub glibc: Option<DottedVersion>,
}

// A real example of this parser's input:
// `pip/23.2.1 {"ci":null,"cpu":"x86_64","distro":{"id":"bookworm","libc":{"lib":"glibc","version":"2.36"}},"python":"3.11.7","system":{"name":"Linux","release":"6.1.0"}}`
/// Reads the platform from a pip or uv User-Agent; `None` when it carries none.
pub fn parse_user_agent(user_agent: &str) -> Option<ClientPlatform> {
    let json = &user_agent[user_agent.find('{')?..];
    let details: Details = serde_json::from_str(json).ok()?;
    let os = match details.system?.name?.as_str() {
        "Linux" => Os::Linux,
        "Windows" => Os::Windows,
        "Darwin" => Os::Macos,
        _ => return None,
    };
    let arch = match details.cpu?.to_ascii_lowercase().as_str() {
        "x86_64" | "amd64" => Arch::X86_64,
        "aarch64" | "arm64" => Arch::Aarch64,
        "s390x" => Arch::S390x,
        _ => return None,
    };
    let glibc = details
        .distro
        .and_then(|d| d.libc)
        .filter(|l| l.lib.as_deref() == Some("glibc"))
        .and_then(|l| l.version)
        .and_then(|v| v.parse().ok());
    Some(ClientPlatform {
        platform: Platform { os, arch },
        glibc,
    })
}

/// The machine to resolve for: `machine`, moved to the client's platform when the client says it
/// runs elsewhere. Accelerators stay: selection only offers builds with files for the platform.
/// Applied to the server's own machine only, never to one the client or the configuration named.
pub fn refine(machine: &Machine, client: Option<&ClientPlatform>) -> Option<Machine> {
    let client = client?;
    if client.platform == machine.platform
        && (client.glibc.is_none() || client.glibc == machine.glibc)
    {
        return None;
    }
    let mut refined = machine.clone();
    refined.platform = client.platform;
    if client.platform.os == Os::Linux {
        refined.glibc.clone_from(&client.glibc);
    } else {
        refined.glibc = None;
    }
    Some(refined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pip_and_uv_user_agents() {
        let pip = r#"pip/23.2.1 {"ci":null,"cpu":"x86_64","distro":{"id":"bookworm","libc":{"lib":"glibc","version":"2.36"}},"python":"3.11.7","system":{"name":"Linux","release":"6.1.0"}}"#;
        let client = parse_user_agent(pip).unwrap();
        assert_eq!(client.platform.to_string(), "linux-x86_64");
        assert_eq!(client.glibc.unwrap().to_string(), "2.36");
        let uv = r#"uv/0.13.9 {"installer":{"name":"uv","version":"0.13.9"},"python":"3.12.1","cpu":"arm64","system":{"name":"Darwin","release":"24.0"}}"#;
        assert_eq!(
            parse_user_agent(uv).unwrap().platform.to_string(),
            "macos-arm64"
        );
        assert_eq!(parse_user_agent("curl/8.0"), None);
        assert_eq!(parse_user_agent("pip/1 {garbage"), None);
    }

    #[test]
    fn a_mac_client_moves_the_machine_to_macos() {
        let machine: Machine =
            serde_json::from_str(r#"{"platform":"linux-x86_64","glibc":"2.36"}"#).unwrap();
        let mac = ClientPlatform {
            platform: "macos-arm64".parse().unwrap(),
            glibc: None,
        };
        assert_eq!(
            refine(&machine, Some(&mac)).unwrap().platform.to_string(),
            "macos-arm64"
        );
        let same = ClientPlatform {
            platform: "linux-x86_64".parse().unwrap(),
            glibc: Some("2.36".parse().unwrap()),
        };
        assert_eq!(refine(&machine, Some(&same)), None);
    }
}
