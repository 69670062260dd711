import statistics
from opensearchpy import OpenSearch
from tests.benchmarks.corpus import Corpus, CorpusConfig
from tests.benchmarks.queries import QueryGenerator
from sessionlog.query import Scope, SessionQueryRequest
from sessionlog.query.plan import plan_request
from sessionlog.query.builder import scan_body, search_body, count_body
corpus = Corpus(CorpusConfig(entries=50000, seed=7))
records = list(corpus.records())
qs = [q.as_dict() for q in QueryGenerator(records, seed=7, max_df=3 * corpus.stats.passes).generate(40)]
qs = [q for q in qs if q["scope_kind"] == "session"][:300]
c = OpenSearch(hosts=["http://127.0.0.1:9200"])
out = {"scan": [], "index": [], "count": []}
for q in qs:
    sid = q["scope_id"]
    plan, _ = plan_request(SessionQueryRequest(session_id=sid, query=q["text"], limit=10), Scope.session(sid), 100)
    for name, body in (("scan", scan_body(plan, size=501)), ("index", search_body(plan, size=11)), ("count", count_body(plan))):
        r = c.search(index="os15s-scan50k-events", routing=sid, body=body)
        out[name].append(r["took"])
for k, v in out.items():
    v.sort(); print(k, "p50", v[len(v)//2], "p95", v[int(.95*len(v))], "mean %.2f" % statistics.mean(v))
