from pathlib import Path

from app.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_setting_is_documented_in_the_readme():
    text = README.read_text()
    missing = [f"LONGREAD_{name.upper()}" for name in Settings.model_fields if f"`LONGREAD_{name.upper()}`" not in text]
    assert missing == []


def test_settings_come_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGREAD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LONGREAD_CHUNK_TOKENS", "512")
    s = Settings()
    assert s.chunk_tokens == 512
    assert s.resolved_database_url == f"sqlite:///{tmp_path.resolve()}/longread.db"
    assert s.resolved_broker_url == f"sqla+sqlite:///{tmp_path.resolve()}/broker.db"
    monkeypatch.setenv("LONGREAD_DATABASE_URL", "postgresql+psycopg://u@h/db")
    assert Settings().resolved_database_url == "postgresql+psycopg://u@h/db"
