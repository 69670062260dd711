"""The benchmark corpus: real conversations as backscroll wire records.

Source
    The PyPI package ``chitchat-dataset`` ships ``dataset.json`` in its wheel: 7,168 real human
    conversations, 258,145 utterances. The file is read straight from the installed distribution
    (located through ``importlib.metadata``); nothing is downloaded.

Mapping
    * one conversation → one session (``session_id`` = the conversation's UUID);
    * the sender of the first message → ``user``, the other sender → ``assistant``; every non-empty
      utterance is one ``user/message`` / ``assistant/message`` event with ``surface {"op": "append"}``;
      a user message group opens a new turn;
    * after a user group, with probability ``tool_rate``, the agent makes 1–3 tool calls: a
      ``tool/call`` event (role ``assistant``, the arguments as JSON text) followed by its
      ``tool/result`` (role ``tool``, ``surface`` append). Results are real text from the machine
      (Debian changelog stanzas, Python stdlib source chunks, ``grep`` lines, Chinese, Japanese and
      Korean messages from the Debian packages' translation catalogs; see
      :mod:`benchmarks.realtext`) or synthetic ``run_sql`` / ``crm_lookup`` outputs that carry
      ``acct_9931``-like ids, order ids, amounts, versions and real accented names and places; a share
      ``stripped_rate`` of those is written accent-stripped, as typed on a US keyboard ("Nguyen",
      "Lodz"), so that "accents added" queries have something to find;
    * about every ``compaction_every`` entries a ``compaction/summary`` event (role ``system``, no
      surface, ``sources`` = the summarised seqs, extractive text quoting the span). These
      are bookkeeping, not searchable by default: systems index only :data:`SEARCHABLE_TYPES`;
    * each session starts with its header record (``kind: header``) carrying the conversation's start
      time and prompt as title;
    * sessions are spread over ``n_workspaces`` workspaces (``ws-0001``…) with Zipf-like sizes: the
      rank-k workspace receives a session with probability ∝ 1/k^``zipf_s`` (s = 1.1 puts about a
      quarter of all sessions in ``ws-0001``).

Determinism
    Every random choice comes from ``random.Random`` seeded with a string built from the seed, the
    pass number and the conversation key, so a (seed, entries) pair gives the same records on the same
    machine image (the tool text comes from the image; the pool fingerprint is recorded in results).

Scaling to ≥ 1M entries (repetition with perturbed ids)
    One pass over the conversations gives ≈ 330k events (258k utterances plus tool pairs and
    summaries). Sessions are emitted pass after pass, pass ``r`` in its own seeded order, until exactly
    ``entries`` events were produced (the last session may be cut short; seqs stay contiguous). In pass
    ``r ≥ 1`` a session's id is ``<uuid>.r<r>`` and its times are shifted by 400·r days; its workspace,
    its tool calls (which real chunk, which ids, amounts, names) and its summaries are drawn afresh
    from the pass's RNG stream. Chat text repeats verbatim across passes, as popular phrasings repeat
    across real users; ids do not. 1M entries = three full passes plus part of a fourth.
"""

from __future__ import annotations

import bisect
import importlib.metadata
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.folding import strip_accents
from benchmarks.realtext import PEOPLE, PLACES, WORDS, TextPool, build_pool

__all__ = [
    "SEARCHABLE_TYPES",
    "Conversation",
    "Corpus",
    "CorpusConfig",
    "chitchat_path",
    "is_searchable",
    "load_conversations",
]

#: Event types backscroll searches by default; the baselines index exactly these.
SEARCHABLE_TYPES = frozenset({"user/message", "assistant/message", "tool/call", "tool/result"})

_APPEND = {"op": "append"}
_STATUSES = ["shipped", "pending", "on hold", "refunded", "delivered", "awaiting payment"]
_TOOLS = [
    ("read_file", 28),
    ("changelog", 24),
    ("run_sql", 20),
    ("crm_lookup", 16),
    ("grep", 12),
    ("l10n", 8),
]


def is_searchable(record: dict[str, Any]) -> bool:
    return (
        record.get("kind") == "event" and record.get("type") in SEARCHABLE_TYPES and bool(record.get("text"))
    )


@dataclass(frozen=True)
class CorpusConfig:
    entries: int = 100_000
    seed: int = 7
    workspaces: int | None = None  # None: max(4, entries // 2500)
    zipf_s: float = 1.1
    tool_rate: float = 0.3
    compaction_every: int = 40
    stripped_rate: float = 0.35

    @property
    def n_workspaces(self) -> int:
        return self.workspaces or max(4, self.entries // 2500)


@dataclass(frozen=True)
class Conversation:
    key: str
    start: str
    prompt: str
    groups: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (sender, ((text, timestamp), ...))


def chitchat_path() -> Path:
    """The ``dataset.json`` inside the installed ``chitchat-dataset`` distribution."""
    try:
        dist = importlib.metadata.distribution("chitchat-dataset")
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            "chitchat-dataset is not installed: /work/venv/bin/pip install 'chitchat-dataset==0.9.0' "
            "(or pip install -e '.[bench]')"
        ) from None
    for file in dist.files or []:
        if file.name == "dataset.json":
            return Path(str(dist.locate_file(file)))
    raise FileNotFoundError("chitchat-dataset is installed but its dataset.json was not found")


def load_conversations(path: Path | None = None) -> list[Conversation]:
    """All conversations, sorted by key (the JSON object's order is not relied on)."""
    data = json.loads((path or chitchat_path()).read_text(encoding="utf-8"))
    conversations = []
    for key in sorted(data):
        conv = data[key]
        groups = tuple(
            (group[0]["sender"], tuple((u["text"], u["timestamp"]) for u in group))
            for group in conv["messages"]
            if group
        )
        if groups:
            conversations.append(Conversation(key, conv["start"], conv.get("prompt") or "", groups))
    return conversations


def _fmt(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@dataclass
class CorpusStats:
    events: int = 0
    headers: int = 0
    passes: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    workspace_events: Counter[str] = field(default_factory=Counter)
    session_events: list[int] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        sizes = sorted(self.session_events)
        ws = self.workspace_events.most_common()
        return {
            "events": self.events,
            "sessions": self.headers,
            "passes": self.passes,
            "by_type": dict(sorted(self.by_type.items())),
            "searchable": sum(n for t, n in self.by_type.items() if t in SEARCHABLE_TYPES),
            "workspaces": len(ws),
            "largest_workspace_events": ws[0][1] if ws else 0,
            "smallest_workspace_events": ws[-1][1] if ws else 0,
            "session_events_median": sizes[len(sizes) // 2] if sizes else 0,
            "session_events_max": sizes[-1] if sizes else 0,
        }


class Corpus:
    """Iterate the corpus: header and event dicts, valid per ``backscroll.ingest.wire.parse_record``.

    Exactly ``config.entries`` event records are produced (headers are not counted).
    """

    def __init__(
        self,
        config: CorpusConfig,
        *,
        conversations: list[Conversation] | None = None,
        pool: TextPool | None = None,
    ) -> None:
        self.config = config
        self.conversations = conversations if conversations is not None else load_conversations()
        self.pool = pool if pool is not None else build_pool(config.seed)
        weights = [1.0 / (k**config.zipf_s) for k in range(1, config.n_workspaces + 1)]
        total = sum(weights)
        running = 0.0
        self._cdf = []
        for w in weights:
            running += w / total
            self._cdf.append(running)
        self.stats = CorpusStats()

    # -- public ---------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.records()

    def records(self) -> Iterator[dict[str, Any]]:
        self.stats = CorpusStats()
        remaining = self.config.entries
        r = 0
        while remaining > 0:
            order = list(range(len(self.conversations)))
            random.Random(f"{self.config.seed}/order/{r}").shuffle(order)
            self.stats.passes = r + 1
            for index in order:
                header, events = self._session(self.conversations[index], r)
                if not events:
                    continue
                events = events[:remaining]
                self.stats.headers += 1
                self.stats.session_events.append(len(events))
                yield header
                for event in events:
                    self.stats.events += 1
                    self.stats.by_type[event["type"]] += 1
                    self.stats.workspace_events[event["workspace_id"]] += 1
                    yield event
                remaining -= len(events)
                if remaining <= 0:
                    return
            r += 1

    def write_jsonl(self, path: Path) -> int:
        """Write every record as one JSON line; return the number of records written."""
        path.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        with path.open("w", encoding="utf-8") as out:
            for record in self.records():
                out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                count += 1
        return count

    # -- one session ----------------------------------------------------------------------------

    def _workspace(self, key: str, r: int) -> str:
        draw = random.Random(f"{self.config.seed}/ws/{r}/{key}").random()
        rank = min(bisect.bisect_left(self._cdf, draw), len(self._cdf) - 1)
        return f"ws-{rank + 1:04d}"

    def _session(self, conv: Conversation, r: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        cfg = self.config
        rng = random.Random(f"{cfg.seed}/s/{r}/{conv.key}")
        sid = conv.key if r == 0 else f"{conv.key}.r{r}"
        ws = self._workspace(conv.key, r)
        shift = timedelta(days=400 * r)
        now = _parse(conv.start) + shift
        header: dict[str, Any] = {
            "v": 1,
            "kind": "header",
            "workspace_id": ws,
            "session_id": sid,
            "created_at": _fmt(now),
            "origin": "chitchat-dataset",
        }
        if conv.prompt:
            header["title"] = conv.prompt[:200]

        events: list[dict[str, Any]] = []
        user = conv.groups[0][0]
        turn = 0
        last_compaction = 0

        def add(event_type: str, role: str | None, text: str, **extra: Any) -> None:
            event: dict[str, Any] = {
                "v": 1,
                "kind": "event",
                "workspace_id": ws,
                "session_id": sid,
                "seq": len(events),
                "type": event_type,
                "time": _fmt(now),
                "turn": turn,
                "text": text,
            }
            if role is not None:
                event["role"] = role
            event.update(extra)
            events.append(event)

        for group_index, (sender, utterances) in enumerate(conv.groups):
            role = "user" if sender == user else "assistant"
            if role == "user" and group_index > 0:
                turn += 1
            for text, stamp in utterances:
                if not text.strip():
                    continue
                now = max(now, _parse(stamp) + shift)
                add(f"{role}/message", role, text, surface=_APPEND)
            if role == "user" and rng.random() < cfg.tool_rate:
                for _ in range(rng.choice((1, 1, 1, 2, 3))):
                    tool_name, call, result = self._tool_pair(rng, ws)
                    now += timedelta(seconds=rng.randint(1, 9))
                    add("tool/call", "assistant", call, tool_name=tool_name)
                    now += timedelta(seconds=rng.randint(1, 30))
                    add(
                        "tool/result",
                        "tool",
                        result,
                        tool_name=tool_name,
                        surface=_APPEND,
                        attrs={"exit_code": 0, "duration_ms": rng.randint(3, 4000)},
                    )
            if len(events) - last_compaction >= cfg.compaction_every and rng.random() < 0.5:
                now += timedelta(seconds=1)
                add(
                    "compaction/summary",
                    "system",
                    self._summary(events[last_compaction:]),
                )
                last_compaction = len(events)
        return header, events

    @staticmethod
    def _summary(span: list[dict[str, Any]]) -> str:
        def first_words(role: str) -> str:
            for event in span:
                if event.get("role") == role and event["type"].endswith("/message"):
                    return " ".join(event["text"].split()[:12])
            return ""

        tools = sorted({e["tool_name"] for e in span if e["type"] == "tool/call"})
        parts = [
            f"Compaction summary of seq {span[0]['seq']}–{span[-1]['seq']} "
            f"(turns {span[0]['turn']}–{span[-1]['turn']})."
        ]
        if said := first_words("user"):
            parts.append(f'The user wrote: "{said}".')
        if said := first_words("assistant"):
            parts.append(f'The assistant answered: "{said}".')
        if tools:
            parts.append("Tools used: " + ", ".join(tools) + ".")
        return " ".join(parts)

    # -- tool calls -----------------------------------------------------------------------------

    def _tool_pair(self, rng: random.Random, ws: str) -> tuple[str, str, str]:
        pool = self.pool
        kinds = [
            (k, w)
            for k, w in _TOOLS
            if (k != "read_file" or pool.python)
            and (k != "changelog" or pool.changelog)
            and (k != "grep" or pool.grep_lines)
            and (k != "l10n" or pool.cjk)
        ]
        kind = rng.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]
        if kind == "read_file":
            rel, chunk = rng.choice(pool.python)
            return "read_file", json.dumps({"path": f"lib/python3.11/{rel}"}), chunk
        if kind == "changelog":
            package, stanza = rng.choice(pool.changelog)
            cmd = f"zcat /usr/share/doc/{package}/changelog.Debian.gz | head -n 40"
            return "shell", json.dumps({"cmd": cmd}), stanza
        if kind == "grep":
            start = rng.randrange(len(pool.grep_lines))
            hits = pool.grep_lines[start : start + rng.randint(2, 8)]
            pattern = next((w for w in hits[0][2].replace("(", " ").split() if "_" in w), hits[0][2][:12])
            text = "\n".join(f"Lib/{path}:{number}: {line}" for path, number, line in hits)
            return "grep", json.dumps({"pattern": pattern, "path": "Lib/"}), text
        if kind == "l10n":
            # A localised program's output: consecutive messages of one catalog.
            start = rng.randrange(len(pool.cjk))
            label = pool.cjk[start][0]
            lines = [m for lab, m in pool.cjk[start : start + rng.randint(2, 6)] if lab == label]
            locale, domain = label.split("/", 1)
            cmd = f"LANGUAGE={locale} {domain} --help"
            return "shell", json.dumps({"cmd": cmd}), "\n".join(lines)
        stripped = rng.random() < self.config.stripped_rate

        def accented(items: list[str]) -> str:
            item = rng.choice(items)
            return strip_accents(item) if stripped else item

        if kind == "run_sql":
            k = rng.randint(3, 6)
            rows = sorted(
                (
                    (
                        f"acct_{rng.randint(1000, 99999)}",
                        accented(PEOPLE),
                        accented(PLACES),
                        rng.uniform(50, 60000),
                    )
                    for _ in range(k)
                ),
                key=lambda row: -row[3],
            )
            sql = (
                "SELECT account_id, owner_name, city, sum(spend) AS spend FROM ledger_entries "
                f"WHERE workspace = '{ws}' GROUP BY 1, 2, 3 ORDER BY spend DESC LIMIT {k}"
            )
            total = rng.randint(k, 5000)
            lines = [
                f"run_sql returned {total:,} rows; "
                f"top account by spend was {rows[0][0]} at ${rows[0][3]:,.2f}",
                "account_id | owner_name | city | spend",
                *(f"{a} | {n} | {c} | {s:,.2f}" for a, n, c, s in rows),
            ]
            return "run_sql", json.dumps({"sql": sql}, ensure_ascii=False), "\n".join(lines)
        account = f"acct_{rng.randint(1000, 99999)}"
        order = rng.randint(10000, 999999)
        record = {
            "customer_id": account,
            "name": accented(PEOPLE),
            "city": accented(PLACES),
            "order_id": f"ord_{order}",
            "order_label": f"{accented(WORDS)} #{order}",
            "status": rng.choice(_STATUSES),
            "client_version": rng.choice(pool.versions)
            if pool.versions
            else f"{rng.randint(1, 9)}.{rng.randint(0, 40)}",
            "txn": f"txn_{rng.getrandbits(40):010x}",
        }
        return (
            "crm_lookup",
            json.dumps({"customer_id": account}),
            json.dumps(record, ensure_ascii=False, indent=1),
        )
