"""The persistent model-call cache: stable keys, persistence across processes, counters."""

from fact_reasoner.cache import ModelCache, cache_key


def test_key_is_order_insensitive_and_parameter_sensitive():
    a = cache_key(
        "local", "m", "nli-llm/v1", {"messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 1}
    )
    b = cache_key(
        "local", "m", "nli-llm/v1", {"seed": 1, "temperature": 0, "messages": [{"content": "x", "role": "user"}]}
    )
    assert a == b
    assert a != cache_key(
        "local", "m", "nli-llm/v1", {"messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 2}
    )
    assert a != cache_key(
        "local", "m", "nli-llm/v2", {"messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 1}
    )
    assert a != cache_key(
        "openai", "m", "nli-llm/v1", {"messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 1}
    )
    assert a != cache_key(
        "local", "m2", "nli-llm/v1", {"messages": [{"role": "user", "content": "x"}], "temperature": 0, "seed": 1}
    )


def test_persists_across_instances_and_counts(tmp_path):
    request = {"messages": [{"role": "user", "content": "hello"}]}
    key = cache_key("local", "m", "t/v1", request)
    first = ModelCache.in_dir(tmp_path)
    assert first.get(key) is None
    first.put(
        key,
        {"choices": [{"message": {"content": "hi"}}]},
        backend="local",
        model="m",
        prompt_version="t/v1",
        request=request,
    )
    first.close()
    second = ModelCache.in_dir(tmp_path)
    assert second.get(key) == {"choices": [{"message": {"content": "hi"}}]}
    assert second.get("nope") is None
    assert second.stats() == {"cache_hits": 1, "cache_misses": 1, "cache_writes": 0}
    assert len(second) == 1
    assert (tmp_path / "model_calls.sqlite").exists()


def test_in_memory_cache_keeps_nothing_between_instances():
    one = ModelCache(None)
    one.put("k", {"x": 1}, backend="b", model="m", prompt_version="p", request={})
    assert one.get("k") == {"x": 1}
    assert ModelCache(None).get("k") is None


def test_a_cache_on_a_network_filesystem_is_warned_about(tmp_path, monkeypatch, caplog):
    import fact_reasoner.cache as cache_module

    assert cache_module.filesystem_type(tmp_path) is not None  # read from /proc/mounts
    caplog.set_level("WARNING", logger="fact_reasoner.cache")
    ModelCache(tmp_path / "local.sqlite").close()
    assert "network filesystem" not in caplog.text
    monkeypatch.setattr(cache_module, "filesystem_type", lambda path: "nfs4")
    ModelCache(tmp_path / "shared.sqlite").close()
    assert "is on a network filesystem (nfs4)" in caplog.text and "its own --cache-dir" in caplog.text
