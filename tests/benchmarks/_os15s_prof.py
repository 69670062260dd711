import time, statistics, cProfile, pstats, sys
from tests.benchmarks.corpus import Corpus, CorpusConfig
from tests.benchmarks.queries import QueryGenerator
from sessionlog.query import OpenSearchProvider, Scope, SessionQueryRequest
corpus = Corpus(CorpusConfig(entries=50000, seed=7))
records = list(corpus.records())
qs = [q.as_dict() for q in QueryGenerator(records, seed=7, max_df=3 * corpus.stats.passes).generate(40)]
qs = [q for q in qs if q["scope_kind"] == "session"][:200]
provs = {}
def run(rows):
    t = []
    for q in qs:
        key = (q["scope_id"], rows)
        p = provs.get(key) or provs.setdefault(key, OpenSearchProvider(Scope.session(q["scope_id"]), hosts="http://127.0.0.1:9200", index_prefix="os15s-scan50k", scan_max_rows=rows, request_timeout_s=60))
        s = time.perf_counter()
        p.search(SessionQueryRequest(session_id=q["scope_id"], query=q["text"], limit=10))
        t.append((time.perf_counter() - s) * 1000)
    return t
run(500); run(0)
for rows in ():
    t = sorted(run(rows)); print(rows, "p50 %.1f p95 %.1f mean %.1f" % (t[len(t)//2], t[int(.95*len(t))], statistics.mean(t)))
pr = cProfile.Profile(); pr.enable(); run(500); pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(30)
