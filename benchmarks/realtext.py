"""Real text found on this machine, and the small word lists the corpus injects.

Tool results in the corpus are made from text that exists on the machine, so identifiers, version
numbers, bug numbers and people's names look the way they do in real tool output:

* Debian changelogs (``/usr/share/doc/*/changelog.Debian.gz``): one stanza per version, with package
  versions (``2.36-9+deb12u4``), bug numbers (``Closes: #1021082``), CVE ids and maintainers' names,
  some of them accented (``Sebastian Dröge``, ``Ondřej Nový``, ``Étienne Mollier``);
* the Python standard library's source files: chunks of code full of snake_case identifiers.

The machine's text has few accented words, so :data:`ACCENTED` lists real names, places and words
(Vietnamese, French, German, Polish, Nordic, Czech, Spanish, Portuguese, Turkish) that the synthetic
CRM/SQL tool results use, and :data:`LOANWORDS` lists English words that have a natural accented
spelling ("cafe"/"café") for the "accents added" query variant.

The pool is deterministic for a given seed *on a given machine image*: the files come from the image.
:attr:`TextPool.fingerprint` is recorded in every result so that runs on different images can be told
apart.
"""

from __future__ import annotations

import gettext
import gzip
import hashlib
import random
import re
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.folding import TOKEN_RE, fold

__all__ = ["ACCENTED", "ACCENT_FORMS", "LOANWORDS", "PEOPLE", "PLACES", "WORDS", "TextPool", "build_pool"]

#: Real accented names of people (Vietnamese, French, German, Polish, Nordic, Czech, Spanish, Turkish).
PEOPLE: list[str] = [
    "Nguyễn Thị Mai",
    "Trần Văn Đức",
    "Phạm Minh Châu",
    "Lê Hoàng Yến",
    "Huỳnh Tấn Phát",
    "Bùi Tiến Dũng",
    "Đặng Thùy Trâm",
    "Hélène Dubois",
    "François Lefèvre",
    "Chloé Bérard",
    "Benoît Mézière",
    "Anaïs Pétrel",
    "Gérard Côté",
    "Jürgen Weiß",
    "Bärbel Schäfer",
    "Günther Müller",
    "Käthe Böhm",
    "Łukasz Wróbel",
    "Małgorzata Żak",
    "Przemysław Szczęsny",
    "Zbigniew Łęcki",
    "Søren Østergaard",
    "Bjørn Ødegård",
    "Åsa Ström",
    "Þórunn Guðmundsdóttir",
    "Ólafur Ragnarsson",
    "Antonín Dvořák",
    "Ondřej Novák",
    "Begoña Peña",
    "João Conceição",
    "Şule Çelik",
]

#: Real accented place and street names.
PLACES: list[str] = [
    "Hà Nội",
    "Đà Nẵng",
    "Hải Phòng",
    "Cần Thơ",
    "Phường Bến Nghé",
    "Montréal",
    "Besançon",
    "Orléans",
    "Périgueux",
    "Hauptstraße 12, Köln",
    "Lindenstraße 4, München",
    "Düsseldorf",
    "Łódź",
    "Wrocław",
    "Gdańsk",
    "Kraków",
    "Zielona Góra",
    "Bielsko-Biała",
    "Ærøskøbing",
    "Tromsø",
    "Göteborg",
    "Malmö",
    "Jyväskylä",
    "Reykjavík",
    "Ålesund",
    "Plzeň",
    "Cádiz",
    "São Paulo",
    "Gümüşhane",
    "İzmir",
]

#: Real accented words and short phrases (order labels, statuses, notes).
WORDS: list[str] = [
    "Đơn hàng",
    "giao hàng",
    "thanh toán",
    "đã xác nhận",
    "livraison prévue",
    "déjà facturé",
    "crème brûlée",
    "Lieferschein",
    "Übergabeprotokoll",
    "Größe",
    "Grüße",
    "zamówienie",
    "przesyłka",
    "smørrebrød",
    "blåbærsyltetøy",
    "jalapeño",
]

ACCENTED: dict[str, list[str]] = {"people": PEOPLE, "places": PLACES, "words": WORDS}

#: English words with a natural accented spelling: corpus form (ASCII) → accented form.
LOANWORDS: dict[str, str] = {
    "cafe": "café",
    "cafes": "cafés",
    "resume": "résumé",
    "naive": "naïve",
    "cliche": "cliché",
    "fiance": "fiancé",
    "fiancee": "fiancée",
    "jalapeno": "jalapeño",
    "jalapenos": "jalapeños",
    "pinata": "piñata",
    "senor": "señor",
    "facade": "façade",
    "creme": "crème",
    "brulee": "brûlée",
    "soiree": "soirée",
    "entree": "entrée",
    "decor": "décor",
    "protege": "protégé",
    "pokemon": "Pokémon",
    "beyonce": "Beyoncé",
    "zurich": "Zürich",
    "doppelganger": "doppelgänger",
    "expose": "exposé",
    "touche": "touché",
    "mexico": "México",
    "quebec": "Québec",
    "montreal": "Montréal",
    "bjork": "Björk",
    "nino": "niño",
    "manana": "mañana",
    "pate": "pâté",
    "saute": "sauté",
    "puree": "purée",
    "voila": "voilà",
    "eclair": "éclair",
    "frappe": "frappé",
    "pina": "piña",
}


def _accent_forms() -> dict[str, str]:
    forms: dict[str, str] = {}
    for phrase in (*PEOPLE, *PLACES, *WORDS):
        for word in TOKEN_RE.findall(phrase):
            if len(word) >= 4 and fold(word) != word.lower():
                forms.setdefault(fold(word), word)
    for ascii_word, accented in LOANWORDS.items():
        forms.setdefault(ascii_word, accented)
    return forms


#: Folded ASCII form → a natural accented spelling (from both lists above), words of 4+ letters.
ACCENT_FORMS: dict[str, str] = _accent_forms()

_STANZA_HEAD = re.compile(r"^[a-z0-9][a-z0-9+.-]* \([^)]+\) [^;]*;", re.MULTILINE)
_VERSION = re.compile(r"\(([0-9][^)\s]*)\)")
_DEF_LINE = re.compile(r"^(?:def |class |async def )", re.MULTILINE)
_IDENT = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_MAX_CHUNK = 1600


@dataclass
class TextPool:
    """Chunks of real text to build tool results from."""

    changelog: list[tuple[str, str]] = field(default_factory=list)  # (package, stanza)
    python: list[tuple[str, str]] = field(default_factory=list)  # (relative path, code chunk)
    identifiers: list[str] = field(default_factory=list)  # snake_case names seen in the code
    grep_lines: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line number, line)
    versions: list[str] = field(default_factory=list)  # Debian package versions seen in the changelogs
    cjk: list[tuple[str, str]] = field(default_factory=list)  # (locale/domain, translated message)
    fingerprint: str = ""

    def describe(self) -> dict[str, object]:
        return {
            "changelog_stanzas": len(self.changelog),
            "python_chunks": len(self.python),
            "identifiers": len(self.identifiers),
            "grep_lines": len(self.grep_lines),
            "versions": len(self.versions),
            "cjk_messages": len(self.cjk),
            "fingerprint": self.fingerprint,
        }


def _changelog_stanzas(path: Path, limit: int) -> list[str]:
    try:
        raw = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return []
    starts = [m.start() for m in _STANZA_HEAD.finditer(raw)]
    stanzas = []
    for i, start in enumerate(starts[:limit]):
        end = starts[i + 1] if i + 1 < len(starts) else len(raw)
        text = raw[start:end].strip()
        if text:
            stanzas.append(text[:_MAX_CHUNK])
    return stanzas


def _python_chunks(text: str) -> list[str]:
    starts = [m.start() for m in _DEF_LINE.finditer(text)] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    chunks = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        chunk = text[start:end].strip("\n")
        if len(chunk) >= 80:
            chunks.append(chunk[:_MAX_CHUNK])
    return chunks


#: Locales whose message catalogs (Debian packages' ``.mo`` translations) give real CJK text.
CJK_LOCALES = ("zh_CN", "zh_TW", "ja", "ko")
_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _cjk_messages(rng: random.Random, max_catalogs: int) -> list[tuple[str, str]]:
    """Translated messages holding CJK text from the machine's message catalogs (a seeded sample)."""
    catalogs = sorted(
        path
        for locale in CJK_LOCALES
        for path in Path("/usr/share/locale", locale, "LC_MESSAGES").glob("*.mo")
    )
    rng.shuffle(catalogs)
    out: list[tuple[str, str]] = []
    for path in catalogs[:max_catalogs]:
        try:
            with path.open("rb") as handle:
                catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        label = f"{path.parent.parent.name}/{path.stem}"
        for key in sorted(catalog, key=str):
            message = catalog[key]
            if isinstance(message, str) and 6 <= len(message) <= 400 and _CJK_CHAR.search(message):
                out.append((label, message.strip()))
    return out


def build_pool(
    seed: int, *, max_packages: int = 400, stanzas_per_package: int = 12, max_python_files: int = 300
) -> TextPool:
    """Harvest the pool: a seeded sample of changelogs and stdlib files, read once."""
    rng = random.Random(f"{seed}/pool")
    pool = TextPool()

    changelogs = sorted(Path("/usr/share/doc").glob("*/changelog.Debian.gz"))
    rng.shuffle(changelogs)
    for path in changelogs[:max_packages]:
        package = path.parent.name
        for stanza in _changelog_stanzas(path, stanzas_per_package):
            pool.changelog.append((package, stanza))
            head = _VERSION.search(stanza)
            if head:
                pool.versions.append(head.group(1))

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(
        p
        for p in stdlib.rglob("*.py")
        if "site-packages" not in p.parts and "dist-packages" not in p.parts and "__pycache__" not in p.parts
    )
    rng.shuffle(files)
    identifiers: set[str] = set()
    for path in files[:max_python_files]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        rel = str(path.relative_to(stdlib))
        pool.python.extend((rel, chunk) for chunk in _python_chunks(text))
        for number, line in enumerate(text.splitlines(), start=1):
            found = _IDENT.findall(line)
            if found and len(line) < 160:
                identifiers.update(found)
                if rng.random() < 0.05:
                    pool.grep_lines.append((rel, number, line.strip()))
    pool.identifiers = sorted(i for i in identifiers if 6 <= len(i) <= 40)
    pool.cjk = _cjk_messages(rng, max_catalogs=80)

    if not pool.changelog and not pool.python:
        raise RuntimeError("no real text found on this machine (no Debian changelogs, no stdlib sources)")
    digest = hashlib.sha256()
    for _, text in pool.changelog:
        digest.update(text.encode())
    for _, text in pool.python:
        digest.update(text.encode())
    for _, text in pool.cjk:
        digest.update(text.encode())
    pool.fingerprint = digest.hexdigest()[:16]
    return pool
