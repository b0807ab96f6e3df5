//! The deployment files in `deploy/` against the real binary and app: every flag in the image's
//! command, the compose file, the Kubernetes container and the systemd unit parses with the
//! binary's own CLI; every configuration (files and the `ConfigMap`'s embedded TOML) parses as
//! `ServeConfig`; ports agree from the config's `listen` to the Service; every probe path is a
//! route the app answers 200 on; the image's curl-less health check works against a real server.
//! No container engine or cluster is needed: the manifests are parsed, not deployed.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;
use wheelgate_config::ServeConfig;
use wheelgate_server::app;
use wheelgate_server::serve::build_state;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read(relative: &str) -> String {
    let path = deploy_dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn parse_config(text: &str, origin: &str) -> ServeConfig {
    toml::from_str(text).unwrap_or_else(|err| panic!("{origin} is not a valid config: {err}"))
}

/// Runs the binary with `args` and `--help` after them, without any `WHEELGATE_*` variable of
/// the test's environment. clap parses every flag and value before it reaches `--help`, so an
/// unknown flag or an invalid value (an address that does not parse) fails.
fn assert_cli_accepts(args: &[String], origin: &str) {
    assert_eq!(
        args.first().map(String::as_str),
        Some("serve"),
        "{origin}: the container/unit must run `wheelgate serve`: {args:?}"
    );
    let output = wheelgate_command()
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{origin}: `wheelgate {}` is rejected by the CLI: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn wheelgate_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wheelgate"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("WHEELGATE_") {
            command.env_remove(name);
        }
    }
    command
}

/// `wheelgate serve --help`: the flags and `[env: NAME=]` variables the binary knows.
fn serve_help() -> String {
    let output = wheelgate_command()
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

fn assert_env_known(names: &BTreeSet<String>, origin: &str) {
    let help = serve_help();
    for name in names.iter().filter(|name| name.starts_with("WHEELGATE_")) {
        assert!(
            help.contains(&format!("[env: {name}=")),
            "{origin} sets `{name}`, which `wheelgate serve` does not read"
        );
    }
}

/// The value of `flag` in `args` (`--flag value` or `--flag=value`).
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let prefix = format!("{flag}=");
    args.iter().enumerate().find_map(|(i, arg)| {
        if arg == flag {
            args.get(i + 1).map(String::as_str)
        } else {
            arg.strip_prefix(prefix.as_str())
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Dockerfile: a few instructions by line, continuation lines joined, comments dropped.

/// The instructions of the Dockerfile's last stage and the number of stages. A real example of
/// this parser's input:
/// ```text
/// FROM debian:bookworm-slim
/// EXPOSE 3141
/// CMD ["serve", "--listen", "0.0.0.0:3141"]
/// ```
fn parse_dockerfile(content: &str) -> (usize, Vec<(String, String)>, Vec<String>) {
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in content.lines() {
        let trimmed = line.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            logical.push(std::mem::take(&mut current));
        }
    }
    let mut stages = 0;
    let mut last_stage = Vec::new();
    for line in &logical {
        let (instruction, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let instruction = instruction.to_ascii_uppercase();
        if instruction == "FROM" {
            stages += 1;
            last_stage.clear();
        }
        last_stage.push((instruction, rest.trim().to_string()));
    }
    (stages, last_stage, logical)
}

fn exec_form(value: &str, origin: &str) -> Vec<String> {
    serde_json::from_str(value)
        .unwrap_or_else(|err| panic!("{origin} must be in exec (JSON) form: `{value}`: {err}"))
}

struct Image {
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    expose: u16,
    uid: u32,
    healthcheck: Vec<String>,
}

fn image() -> Image {
    let (stages, last, all) = parse_dockerfile(&read("Dockerfile"));
    assert!(stages >= 2, "the Dockerfile must be multi-stage");
    // The image runs the binary scripts/release built and checked: its tarball, named as the
    // script names it, verified against SHA256SUMS; nothing compiled in the image.
    let release =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/release"))
            .expect("scripts/release");
    assert!(
        release.contains(r#"tarball="wheelgate-$version-$triple.tar.gz""#)
            && release.contains("triple=x86_64-unknown-linux-gnu"),
        "scripts/release no longer names the tarball the Dockerfile unpacks"
    );
    assert!(
        all.iter().any(|l| l.starts_with("COPY target/dist/")),
        "the image must be made from target/dist/"
    );
    assert!(
        all.iter().any(|l| l
            .contains(r#"tarball="wheelgate-$VERSION-$arch-unknown-linux-gnu.tar.gz""#)
            && l.contains("sha256sum -c")
            && l.contains(r#"tar -xzf "/dist/$tarball""#)),
        "the image must unpack the release tarball after checking it against SHA256SUMS"
    );
    assert!(
        !all.iter().any(|l| l.contains("cargo ")),
        "the image must not compile: it runs the tested binary"
    );
    let ignore =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.dockerignore"))
            .expect(".dockerignore");
    assert!(
        ignore.lines().any(|l| l.trim() == "!target/dist/"),
        ".dockerignore must let target/dist/ into the build context"
    );
    let get = |name: &str| {
        last.iter()
            .rev()
            .find(|(instruction, _)| instruction == name)
            .map_or_else(
                || panic!("the final stage has no {name}"),
                |(_, rest)| rest.clone(),
            )
    };
    assert_eq!(get("FROM"), "debian:bookworm-slim");
    // OCI annotations a registry and a security scanner read.
    let labels = get("LABEL");
    for key in [
        "org.opencontainers.image.title",
        "org.opencontainers.image.licenses=\"Apache-2.0\"",
        "org.opencontainers.image.version",
        "org.opencontainers.image.revision",
    ] {
        assert!(labels.contains(key), "LABEL lacks `{key}`: {labels}");
    }
    let user = get("USER");
    let uid: u32 = user
        .split(':')
        .next()
        .unwrap()
        .parse()
        .expect("USER is a numeric uid (runAsNonRoot can check it)");
    assert_ne!(uid, 0, "the image must not run as root");
    let healthcheck = get("HEALTHCHECK");
    let (_, command) = healthcheck
        .split_once("CMD ")
        .expect("HEALTHCHECK ... CMD [...]");
    let healthcheck = exec_form(command.trim(), "HEALTHCHECK");
    assert!(
        !healthcheck.iter().any(|a| a.contains("curl")),
        "the runtime image has no curl"
    );
    let entrypoint = exec_form(&get("ENTRYPOINT"), "ENTRYPOINT");
    let binary = entrypoint[0].clone();
    assert!(
        last.iter()
            .any(|(i, rest)| i == "COPY" && rest.starts_with("--from=") && rest.ends_with(&binary)),
        "the final stage must copy the binary to the ENTRYPOINT's `{binary}`"
    );
    let cmd = exec_form(&get("CMD"), "CMD");
    let cache = flag_value(&cmd, "--cache-dir").expect("CMD names its --cache-dir");
    assert!(
        get("VOLUME").contains(&format!("\"{cache}\"")),
        "the cache directory `{cache}` must be a VOLUME"
    );
    Image {
        entrypoint,
        cmd,
        expose: get("EXPOSE")
            .trim_end_matches("/tcp")
            .parse()
            .expect("one EXPOSE port"),
        uid,
        healthcheck,
    }
}

/// Where the HEALTHCHECK connects: bash's `/dev/tcp/HOST/PORT`, followed by a space.
fn tcp_target(port: u16) -> String {
    format!("/dev/tcp/127.0.0.1/{port} ")
}

#[test]
fn cli_check_rejects_unknown_flags_and_bad_values() {
    let run = |args: &[&str]| {
        wheelgate_command()
            .args(args)
            .arg("--help")
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(run(&["serve", "--listen", "0.0.0.0:3141"]));
    assert!(!run(&["serve", "--no-such-flag"]));
    assert!(!run(&["serve", "--listen", "not-an-address"]));
}

#[test]
fn dockerfile_entrypoint_and_cmd_run_the_real_cli() {
    let image = image();
    assert_eq!(image.entrypoint.len(), 1, "ENTRYPOINT is the binary alone");
    assert!(image.entrypoint[0].ends_with("/wheelgate"));
    assert_cli_accepts(&image.cmd, "Dockerfile CMD");
    let listen: SocketAddr = flag_value(&image.cmd, "--listen")
        .expect("CMD sets --listen (the default is loopback only, unreachable in a container)")
        .parse()
        .unwrap();
    assert!(
        listen.ip().is_unspecified(),
        "CMD must listen on all interfaces"
    );
    assert_eq!(
        listen.port(),
        image.expose,
        "EXPOSE and CMD's --listen port"
    );
    assert!(
        image
            .healthcheck
            .join(" ")
            .contains(&tcp_target(image.expose)),
        "HEALTHCHECK must probe the exposed port"
    );
}

// ---------------------------------------------------------------------------------------------
// Configuration files.

/// Every sample config under deploy/ (`mirror*.toml` are `mirror sync` configs, not server ones).
fn serve_config_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml")
                && !path
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("mirror")
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&deploy_dir(), &mut files);
    files.sort();
    files
}

#[test]
fn every_config_under_deploy_parses_as_serve_config() {
    let files = serve_config_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(deploy_dir()).unwrap().display().to_string())
        .collect();
    for expected in ["wheelgate.toml", "compose/wheelgate.toml", "company.toml"] {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }
    for path in &files {
        let config = ServeConfig::from_file(path).unwrap_or_else(|err| panic!("{err}"));
        // Its sources are checked as `serve` checks them at start.
        wheelgate_index::sources::Sources::configured(&config)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    }
    let company = ServeConfig::from_file(&deploy_dir().join("company.toml")).unwrap();
    let sources = wheelgate_index::sources::Sources::configured(&company).unwrap();
    let owners = |project: &str| -> Vec<String> {
        sources
            .owners(project)
            .into_iter()
            .map(|id| sources.get(id).name.clone())
            .collect()
    };
    assert_eq!(owners("acme-utils"), ["internal"]);
    assert_eq!(owners("acme-vision"), ["internal", "vision-team"]);
    assert_eq!(owners("numpy"), ["pypi"]);
    // The presets: per-build pages for PyG and mmcv, AMD's index beside the PyTorch index.
    let presets = ServeConfig::from_file(&deploy_dir().join("presets.toml")).unwrap();
    let presets = wheelgate_index::sources::Sources::configured(&presets).unwrap();
    let kind = |name: &str| presets.by_name(name).unwrap().1.kind;
    assert_eq!(kind("pyg"), wheelgate_index::sources::SourceKind::PerBuild);
    assert_eq!(
        kind("openmmlab"),
        wheelgate_index::sources::SourceKind::PerBuild
    );
    assert_eq!(kind("amd"), wheelgate_index::sources::SourceKind::Index);
    let owner_names = |project: &str| -> Vec<String> {
        presets
            .owners(project)
            .into_iter()
            .map(|id| presets.get(id).name.clone())
            .collect()
    };
    assert_eq!(owner_names("torch-scatter"), ["pyg"]);
    assert_eq!(owner_names("torch"), ["pytorch", "amd", "pypi"]);
    assert_eq!(owner_names("amd-torch-device-gfx942"), ["amd"]);
    let (_, configmap_toml) = k8s_config();
    let config = parse_config(&configmap_toml, "the ConfigMap's wheelgate.toml");
    assert!(config.machine.is_some(), "a pod has no GPU to probe");
    assert!(config.object_store.is_some(), "replicas share the bucket");
    let compose = ServeConfig::from_file(&deploy_dir().join("compose/wheelgate.toml")).unwrap();
    assert!(compose.object_store.is_some());
}

// ---------------------------------------------------------------------------------------------
// Compose.

fn yaml(relative: &str) -> Vec<Value> {
    let text = read(relative);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|document| {
            serde::Deserialize::deserialize(document)
                .unwrap_or_else(|err| panic!("{relative}: {err}"))
        })
        .filter(|value: &Value| !value.is_null())
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("expected a list: {value:?}"))
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    let mut value = value;
    for key in path {
        value = &value[*key];
    }
    value
        .as_str()
        .unwrap_or_else(|| panic!("no string at {path:?}"))
}

#[test]
fn compose_runs_the_image_with_its_config_and_object_store() {
    let compose = yaml("compose.yaml").remove(0);
    let services = compose["services"].as_mapping().unwrap();
    let proxy = &compose["services"]["wheelgate"];
    assert_eq!(str_at(proxy, &["build", "context"]), "..");
    let dockerfile = str_at(proxy, &["build", "dockerfile"]);
    assert!(deploy_dir().join("..").join(dockerfile).is_file());

    let args = strings(&proxy["command"]);
    assert_cli_accepts(&args, "compose.yaml");
    let config_path = flag_value(&args, "--config").expect("compose passes --config");
    let mount = strings(&proxy["volumes"])
        .into_iter()
        .find(|v| v.split(':').nth(1) == Some(config_path))
        .expect("the --config file is mounted");
    let source = mount.split(':').next().unwrap();
    let config = ServeConfig::from_file(&deploy_dir().join(source)).unwrap();

    let port = config.listen.port();
    let published: Vec<String> = strings(&proxy["ports"]);
    assert!(
        published
            .iter()
            .any(|p| p.rsplit(':').next() == Some(&port.to_string())),
        "compose must publish the config's listen port {port}: {published:?}"
    );

    let store = config
        .object_store
        .expect("[object_store] in the compose config");
    let endpoint = store.endpoint.expect("an endpoint on the compose network");
    let host = endpoint
        .trim_start_matches("http://")
        .split([':', '/'])
        .next()
        .unwrap();
    assert!(
        services.contains_key(host),
        "the endpoint's host `{host}` is a compose service"
    );
    assert!(store.allow_http == endpoint.starts_with("http://"));
    let init = strings(&compose["services"]["s3-init"]["command"]).join(" ");
    assert!(
        init.contains(&format!("--bucket {}", store.bucket)),
        "s3-init creates the bucket `{}`",
        store.bucket
    );
    let env = proxy["environment"].as_mapping().unwrap();
    let names: BTreeSet<String> = env
        .keys()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
        assert!(names.contains(name), "compose gives the proxy `{name}`");
    }
    assert_env_known(&names, "compose.yaml");
}

// ---------------------------------------------------------------------------------------------
// Kubernetes.

fn k8s_objects() -> Vec<Value> {
    let mut objects = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir().join("k8s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for path in files {
        let name = format!("k8s/{}", path.file_name().unwrap().to_string_lossy());
        objects.extend(yaml(&name));
    }
    objects
}

fn object<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let mut found = objects.iter().filter(|o| o["kind"].as_str() == Some(kind));
    let first = found
        .next()
        .unwrap_or_else(|| panic!("no {kind} in deploy/k8s"));
    assert!(found.next().is_none(), "one {kind} in deploy/k8s");
    first
}

/// The `ConfigMap`'s name and its `wheelgate.toml`.
fn k8s_config() -> (String, String) {
    let objects = k8s_objects();
    let configmap = object(&objects, "ConfigMap");
    (
        str_at(configmap, &["metadata", "name"]).to_string(),
        str_at(configmap, &["data", "wheelgate.toml"]).to_string(),
    )
}

#[allow(clippy::too_many_lines)] // one walk through the Deployment, field by field
#[test]
fn kubernetes_manifests_agree_with_each_other_and_the_binary() {
    let objects = k8s_objects();
    let image = image();
    let deployment = object(&objects, "Deployment");
    assert_eq!(deployment["apiVersion"].as_str(), Some("apps/v1"));
    let name = str_at(deployment, &["metadata", "name"]);
    assert!(deployment["spec"]["replicas"].as_u64().unwrap() >= 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        .as_mapping()
        .unwrap();
    let containers = pod["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];

    // The image's ENTRYPOINT runs the container's args.
    assert!(
        container["command"].is_null(),
        "args only: the ENTRYPOINT is the binary"
    );
    let args = strings(&container["args"]);
    assert_cli_accepts(&args, "deploy/k8s/deployment.yaml");

    // --config is the ConfigMap's key, mounted read-only.
    let config_path = Path::new(flag_value(&args, "--config").expect("--config"));
    let (configmap_name, configmap_toml) = k8s_config();
    let config = parse_config(&configmap_toml, "the ConfigMap's wheelgate.toml");
    let mounts = container["volumeMounts"].as_sequence().unwrap();
    let volumes = pod["volumes"].as_sequence().unwrap();
    let volume_at = |dir: &Path| {
        let mount = mounts
            .iter()
            .find(|m| Path::new(str_at(m, &["mountPath"])) == dir)
            .unwrap_or_else(|| panic!("nothing is mounted at {}", dir.display()));
        let volume_name = str_at(mount, &["name"]);
        let volume = volumes
            .iter()
            .find(|v| str_at(v, &["name"]) == volume_name)
            .unwrap();
        (mount, volume)
    };
    let (config_mount, config_volume) = volume_at(config_path.parent().unwrap());
    assert_eq!(config_mount["readOnly"].as_bool(), Some(true));
    assert_eq!(
        str_at(config_volume, &["configMap", "name"]),
        configmap_name
    );
    assert_eq!(
        config_path.file_name().unwrap().to_str(),
        Some("wheelgate.toml")
    );

    // The cache is a writable emptyDir: the root filesystem is read-only.
    let (_, cache_volume) = volume_at(&config.cache_dir);
    assert!(
        cache_volume["emptyDir"].is_mapping(),
        "cache_dir is an emptyDir"
    );
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(
        pod["securityContext"]["runAsUser"].as_u64(),
        Some(u64::from(image.uid)),
        "runAsUser is the image's USER"
    );

    // Ports: config listen = containerPort = probes' port = Service targetPort.
    let ports = container["ports"].as_sequence().unwrap();
    let resolve = |port: &Value| -> u16 {
        if let Some(number) = port.as_u64() {
            return u16::try_from(number).unwrap();
        }
        let name = port.as_str().unwrap();
        let found = ports
            .iter()
            .find(|p| p["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no container port named `{name}`"));
        u16::try_from(found["containerPort"].as_u64().unwrap()).unwrap()
    };
    let container_port = u16::try_from(ports[0]["containerPort"].as_u64().unwrap()).unwrap();
    assert_eq!(container_port, config.listen.port());
    assert!(config.listen.ip().is_unspecified());
    assert_eq!(container_port, image.expose);
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(
            resolve(&container[probe]["httpGet"]["port"]),
            container_port,
            "{probe} port"
        );
    }
    assert_eq!(
        str_at(container, &["livenessProbe", "httpGet", "path"]),
        "/healthz"
    );
    assert_eq!(
        str_at(container, &["readinessProbe", "httpGet", "path"]),
        "/readyz"
    );

    // Resources: the memory limit holds the < 150 MB resident target with headroom.
    let resources = &container["resources"];
    assert_eq!(str_at(resources, &["limits", "memory"]), "256Mi");
    assert!(resources["requests"]["cpu"].as_str().is_some());
    assert!(resources["requests"]["memory"].as_str().is_some());

    // Environment: known WHEELGATE_* names; S3 keys from the Secret template's keys.
    let env = container["env"].as_sequence().unwrap();
    let names: BTreeSet<String> = env
        .iter()
        .map(|e| str_at(e, &["name"]).to_string())
        .collect();
    assert_env_known(&names, "deploy/k8s/deployment.yaml");
    let secret = object(&objects, "Secret");
    let secret_name = str_at(secret, &["metadata", "name"]);
    for variable in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
        let entry = env
            .iter()
            .find(|e| e["name"].as_str() == Some(variable))
            .unwrap_or_else(|| panic!("the container gets `{variable}`"));
        let reference = &entry["valueFrom"]["secretKeyRef"];
        assert_eq!(str_at(reference, &["name"]), secret_name);
        let key = str_at(reference, &["key"]);
        assert_eq!(
            secret["stringData"][key].as_str(),
            Some("REPLACE_ME"),
            "the Secret template has key `{key}` and no real value"
        );
    }

    // Service: selects the pods, targets the container port.
    let service = object(&objects, "Service");
    for (key, value) in service["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(pod_labels.get(key), Some(value), "Service selector {key:?}");
    }
    let service_ports = service["spec"]["ports"].as_sequence().unwrap();
    assert_eq!(resolve(&service_ports[0]["targetPort"]), container_port);

    // HPA: autoscaling/v2 on CPU, aimed at this Deployment.
    let hpa = object(&objects, "HorizontalPodAutoscaler");
    assert_eq!(hpa["apiVersion"].as_str(), Some("autoscaling/v2"));
    let target = &hpa["spec"]["scaleTargetRef"];
    assert_eq!(str_at(target, &["kind"]), "Deployment");
    assert_eq!(str_at(target, &["apiVersion"]), "apps/v1");
    assert_eq!(str_at(target, &["name"]), name);
    assert!(hpa["spec"]["minReplicas"].as_u64().unwrap() >= 2);
    let metrics = hpa["spec"]["metrics"].as_sequence().unwrap();
    assert!(
        metrics
            .iter()
            .any(|m| m["resource"]["name"].as_str() == Some("cpu"))
    );

    // kustomization.yaml applies every manifest but the Secret template.
    let kustomization = yaml("k8s/kustomization.yaml").remove(0);
    let listed: BTreeSet<String> = strings(&kustomization["resources"]).into_iter().collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(deploy_dir().join("k8s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "kustomization.yaml" && n != "secret.example.yaml")
        .collect();
    assert_eq!(listed, on_disk);
}

// ---------------------------------------------------------------------------------------------
// systemd.

/// `Key=value` lines of one section of a unit file. A real example of this parser's input:
/// ```text
/// [Service]
/// ExecStart=/usr/local/bin/wheelgate serve --config /etc/wheelgate/wheelgate.toml
/// ```
fn parse_unit(content: &str, section: &str) -> Vec<(String, String)> {
    let mut current = String::new();
    let mut entries = Vec::new();
    for line in content.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.to_string();
        } else if current == section
            && let Some((key, value)) = line.split_once('=')
        {
            entries.push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    entries
}

#[test]
fn systemd_unit_runs_the_real_cli_with_the_sample_config() {
    let unit = read("systemd/wheelgate.service");
    let service = parse_unit(&unit, "Service");
    let find = |key: &str| {
        service
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let get = |key: &str| find(key).unwrap_or_else(|| panic!("the unit has no {key}="));
    let exec: Vec<String> = get("ExecStart")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(exec[0], image().entrypoint[0], "the binary's path");
    assert_cli_accepts(&exec[1..], "deploy/systemd/wheelgate.service");
    assert_eq!(
        flag_value(&exec, "--config"),
        Some("/etc/wheelgate/wheelgate.toml")
    );
    // The unit's comments install deploy/wheelgate.toml there; its cache_dir is the
    // CacheDirectory= systemd creates (ProtectSystem=strict leaves only that writable).
    let config = ServeConfig::from_file(&deploy_dir().join("wheelgate.toml")).unwrap();
    assert_eq!(
        Path::new("/var/cache").join(get("CacheDirectory")),
        config.cache_dir
    );
    assert_eq!(get("ProtectSystem"), "strict");
    assert!(
        find("DynamicUser") == Some("yes") || find("User").is_some_and(|u| u != "root"),
        "the service runs as a dynamic or dedicated user"
    );
    let names: BTreeSet<String> = service
        .iter()
        .filter(|(k, _)| k == "Environment")
        .filter_map(|(_, v)| v.split_once('=').map(|(n, _)| n.to_string()))
        .collect();
    assert_env_known(&names, "deploy/systemd/wheelgate.service");
    assert!(
        parse_unit(&unit, "Install")
            .iter()
            .any(|(k, v)| k == "WantedBy" && v == "multi-user.target")
    );
}

// ---------------------------------------------------------------------------------------------
// Probes against the real app.

/// The app as the `ConfigMap` configures it, on 127.0.0.1:0 with a temporary cache, offline and
/// without the bucket (no S3 server here; the probes do not touch it).
async fn start_app(cache: &Path) -> SocketAddr {
    let (_, text) = k8s_config();
    let mut config = parse_config(&text, "the ConfigMap's wheelgate.toml");
    config.cache_dir = cache.to_path_buf();
    config.object_store = None;
    config.offline = true;
    let state = build_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app(state)).await });
    addr
}

#[tokio::test]
async fn probe_paths_of_every_manifest_answer_200() {
    let objects = k8s_objects();
    let container = &object(&objects, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    let mut paths = BTreeSet::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(path) = container[probe]["httpGet"]["path"].as_str() {
            paths.insert(path.to_string());
        }
    }
    let healthcheck = image().healthcheck.join(" ");
    let docker_path = healthcheck
        .split_whitespace()
        .find(|w| w.starts_with('/') && !w.starts_with("/dev/"))
        .expect("the HEALTHCHECK requests a path");
    paths.insert(docker_path.to_string());
    assert!(paths.contains("/healthz") && paths.contains("/readyz"));

    let cache = tempfile::tempdir().unwrap();
    let addr = start_app(cache.path()).await;
    for path in &paths {
        let response = reqwest::get(format!("http://{addr}{path}")).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
}

/// The image's HEALTHCHECK (bash and /dev/tcp, no curl) run as is against a real server, only
/// its port changed: it passes while the server answers and fails once nothing listens.
#[cfg(unix)]
#[tokio::test]
async fn dockerfile_healthcheck_command_works_without_curl() {
    let image = image();
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: no bash on this host");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let addr = start_app(cache.path()).await;
    let run = move |port: u16| {
        let args: Vec<String> = image
            .healthcheck
            .iter()
            .map(|a| a.replace(&tcp_target(image.expose), &tcp_target(port)))
            .collect();
        tokio::task::spawn_blocking(move || {
            Command::new(&args[0]).args(&args[1..]).status().unwrap()
        })
    };
    let healthy = run(addr.port()).await.unwrap();
    assert!(
        healthy.success(),
        "the health check fails on a healthy server"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = run(closed).await.unwrap();
    assert!(!down.success(), "the health check passes with no server");
}

// ---------------------------------------------------------------------------------------------
// Commented examples.

/// `text` with the commented examples that begin with one of `starts` uncommented: from such a
/// line (`# [[networks]]`) to the next line that is not a comment, one `# ` removed from each
/// (a `# # ...` line stays a comment: an alternative, not part of the example).
fn uncomment_examples(text: &str, starts: &[&str]) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in text.lines() {
        let body = line.strip_prefix("# ").or_else(|| line.strip_prefix('#'));
        inside = match body {
            Some(body) => inside || starts.iter().any(|start| body.starts_with(start)),
            None => false,
        };
        out.push_str(if inside { body.unwrap_or(line) } else { line });
        out.push('\n');
    }
    out
}

/// The TOML code blocks of a Markdown file, in order.
fn toml_blocks(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    text.split("```toml\n")
        .skip(1)
        .filter_map(|block| block.split_once("```").map(|(toml, _)| toml.to_string()))
        .collect()
}

/// The first TOML code block of the documentation's pages (`docs/src/*.md`, by name) that
/// contains `needle`.
fn docs_toml(needle: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src");
    let mut pages: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages
        .iter()
        .flat_map(|page| toml_blocks(page))
        .find(|toml| toml.contains(needle))
        .unwrap_or_else(|| panic!("no TOML block with {needle} in docs/src"))
}

#[test]
fn the_readmes_company_setup_is_a_valid_configuration() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let toml = toml_blocks(&readme)
        .into_iter()
        .find(|toml| toml.contains("[[sources]]"))
        .expect("the README shows a company's set-up");
    let config = parse_config(&toml, "README company set-up");
    let sources = wheelgate_index::sources::Sources::configured(&config)
        .unwrap_or_else(|err| panic!("the README's [[sources]]: {err}"));
    let owners: Vec<&str> = sources
        .owners("acme-utils")
        .into_iter()
        .map(|id| sources.get(id).name.as_str())
        .collect();
    assert_eq!(owners, ["internal"]);
    let networks = wheelgate_config::ClientNetworks::resolve(
        &config.networks,
        &config.trusted_proxies,
        wheelgate_resolver::Catalog::embedded(),
        None,
    )
    .unwrap_or_else(|err| panic!("the README's [[networks]]: {err}"));
    let names: Vec<&str> = networks.rules.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(names, ["gpu-cluster"]);
}

#[test]
fn commented_company_examples_work_uncommented_and_match_the_docs() {
    let sample = read("wheelgate.toml");
    let text = uncomment_examples(&sample, &["trusted_proxies", "[[networks]]", "[upstreams."]);
    assert_ne!(text, sample, "the sample has no commented examples");
    let config = parse_config(&text, "deploy/wheelgate.toml uncommented");
    let machine = config.machine.clone().expect("the sample sets [machine]");
    let networks = wheelgate_config::ClientNetworks::resolve(
        &config.networks,
        &config.trusted_proxies,
        wheelgate_resolver::Catalog::embedded(),
        Some(machine.platform),
    )
    .unwrap_or_else(|err| {
        panic!(
            "{err}: {}",
            wheelgate_index::error_chain::source_chain(&err)
        )
    });
    let names: Vec<&str> = networks.rules.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(names, ["gpu-login", "gpu-cluster", "laptops"]);

    // The same rules and section as the docs show.
    let readme: ServeConfig = parse_config(&docs_toml("[[networks]]"), "docs networks");
    assert_eq!(config.networks, readme.networks);
    assert_eq!(config.trusted_proxies, readme.trusted_proxies);
    let readme: ServeConfig = parse_config(&docs_toml("[upstreams.pypi]"), "docs upstreams");
    let (ours, theirs) = (&config.upstreams.pypi, &readme.upstreams.pypi);
    assert!(ours.token.is_some() && ours.basic.is_none());
    assert_eq!(
        (&ours.token, &ours.headers, &ours.ca_bundle),
        (&theirs.token, &theirs.headers, &theirs.ca_bundle)
    );

    // The docs' sources examples are valid configurations, checked as `serve` checks them:
    // the per-build one (PyG's template) and the company's index.
    let pyg: ServeConfig = parse_config(&docs_toml("name = \"pyg\""), "docs per-build source");
    let pyg = wheelgate_index::sources::Sources::configured(&pyg)
        .unwrap_or_else(|err| panic!("the docs' PyG [[sources]]: {err}"));
    assert_eq!(
        pyg.by_name("pyg").unwrap().1.kind,
        wheelgate_index::sources::SourceKind::PerBuild
    );
    let readme: ServeConfig = parse_config(&docs_toml("name = \"internal\""), "docs sources");
    let sources = wheelgate_index::sources::Sources::configured(&readme)
        .unwrap_or_else(|err| panic!("the docs' [[sources]]: {err}"));
    let owners: Vec<&str> = sources
        .owners("acme-utils")
        .into_iter()
        .map(|id| sources.get(id).name.as_str())
        .collect();
    assert_eq!(owners, ["internal"]);

    // The mirror's sample, as it is and with its [upstreams.pypi] uncommented.
    let mirror = read("mirror.toml");
    let path = deploy_dir().join("mirror.toml");
    wheelgate_mirror::MirrorConfig::parse(&mirror, &path).unwrap();
    let text = uncomment_examples(&mirror, &["[upstreams."]);
    let parsed = wheelgate_mirror::MirrorConfig::parse(&text, &path).unwrap();
    assert!(parsed.upstreams.pypi.token.is_some());
    assert!(parsed.upstreams.pypi.ca_bundle.is_some());
}
