"""Where the SDK takes its base URL and key from, and the https rule: offline."""

import os

import pytest

from paddock import ConfigError, InsecureBaseUrlError, MalformedCredentialError, Paddock, check_base_url, config_path
from paddock._config import resolve_settings


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv("PADDOCK_API_KEY", raising=False)
    monkeypatch.delenv("PADDOCK_BASE_URL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def write_config(home, text: str, xdg=None) -> str:
    base = xdg or os.path.join(home, ".config")
    os.makedirs(os.path.join(base, "paddock"), exist_ok=True)
    path = os.path.join(base, "paddock", "config.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def test_the_cli_config_file_is_read_as_the_cli_writes_it(home):
    write_config(home, '# Paddock CLI configuration\nbase_url = "https://paddock.example/"\napi_key = "pdk_live_fromfile"\n')
    s = resolve_settings()
    assert (s.base_url, s.api_key, s.base_url_source, s.api_key_source) == ("https://paddock.example", "pdk_live_fromfile", "file", "file")


def test_xdg_config_home_is_honoured_when_absolute_and_ignored_when_relative(home, monkeypatch):
    xdg = str(home / "xdg")
    write_config(home, 'base_url = "https://xdg.example"\napi_key = "pdk_live_xdg"\n', xdg=xdg)
    monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    assert config_path() == os.path.join(xdg, "paddock", "config.toml")
    assert resolve_settings().base_url == "https://xdg.example"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    assert config_path() == os.path.join(str(home), ".config", "paddock", "config.toml")


def test_the_environment_overrides_the_file_and_arguments_override_both(home, monkeypatch):
    write_config(home, 'base_url = "https://file.example"\napi_key = "pdk_live_file"\n')
    monkeypatch.setenv("PADDOCK_API_KEY", "pdk_live_env")
    s = resolve_settings()
    assert (s.base_url, s.api_key) == ("https://file.example", "pdk_live_env")
    monkeypatch.setenv("PADDOCK_BASE_URL", "https://env.example")
    assert resolve_settings().base_url == "https://env.example"
    s = resolve_settings(api_key="pdk_live_arg", base_url="http://127.0.0.1:9")
    assert (s.base_url, s.api_key, s.api_key_source) == ("http://127.0.0.1:9", "pdk_live_arg", "argument")


def test_nothing_configured_says_how_to_configure(home):
    with pytest.raises(ConfigError, match="PADDOCK_BASE_URL"):
        Paddock()
    with pytest.raises(ConfigError, match="PADDOCK_API_KEY"):
        Paddock(base_url="https://paddock.example")


def test_a_broken_config_file_is_an_error_that_names_it(home):
    path = write_config(home, "base_url = = nope\n")
    with pytest.raises(ConfigError, match="not valid TOML") as err:
        resolve_settings()
    assert path in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://paddock.example",
        "http://10.0.0.1:8080",
        "http://[::1]:80",
        "ftp://paddock.example",
        "https://user:pw@paddock.example",
        "https://paddock.example/?a=1",
        "https://paddock.example/#x",
        "not a url",
        "https://",
    ],
)
def test_the_https_rule_refuses_what_the_cli_refuses(url):
    with pytest.raises(InsecureBaseUrlError):
        check_base_url(url)


def test_the_https_rule_allows_loopback_http_and_normalises():
    assert check_base_url("http://localhost:3000/") == "http://localhost:3000"
    assert check_base_url(" http://127.0.0.1:8080 ") == "http://127.0.0.1:8080"
    assert check_base_url("https://Paddock.Example:443/api/") == "https://paddock.example/api"


def test_an_insecure_url_from_the_environment_is_refused_before_any_request(home, monkeypatch):
    monkeypatch.setenv("PADDOCK_BASE_URL", "http://paddock.example")
    monkeypatch.setenv("PADDOCK_API_KEY", "pdk_live_x")
    with pytest.raises(InsecureBaseUrlError):
        Paddock()


def test_a_key_with_a_line_break_is_refused_without_quoting_it(home):
    with pytest.raises(MalformedCredentialError) as err:
        Paddock(api_key="pdk_live_secret\r\nX-Evil: 1", base_url="http://127.0.0.1:9")
    assert "secret" not in str(err.value)
