"""`wheelgate.select()`: the catalog's answer per requirement, as `wheelgate select` gives it."""

import wheelgate

H100 = '{"platform":"linux-x86_64","nvidia":{"driver_version":"580.65.06","gpus":[{"compute_capability":"9.0"}]}}'


def test_each_requirement_gets_a_backend_an_index_and_reasons():
    machine = wheelgate.Machine.from_json(H100)

    torch, vision = wheelgate.select(["torch==2.9.0", "torchvision"], machine=machine)

    assert (torch.project, torch.version, torch.backend) == ("torch", "2.9.0", "cu130")
    assert torch.index_url.endswith("/whl/cu130")
    assert torch.reasons, "every other backend needs a reason"
    assert all(backend != "cu130" and reason for backend, reason in torch.reasons)
    assert vision.project == "torchvision" and vision.backend is not None


def test_a_cpu_machine_gets_cpu_and_each_gpu_build_says_why_not():
    machine = wheelgate.Machine.from_json('{"platform":"linux-aarch64"}')

    (choice,) = wheelgate.select("torch==2.9.0", machine=machine)

    assert choice.backend == "cpu"
    reasons = dict(choice.reasons)
    assert any(backend.startswith("cu") for backend in reasons)


def test_the_pin_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("WHEELGATE_BACKEND", "cpu")
    (choice,) = wheelgate.select("torch==2.9.0", machine=wheelgate.Machine.from_json(H100))
    assert choice.backend == "cpu"
