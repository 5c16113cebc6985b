// The page of `fact-reasoner serve`: builds one input record from the form, posts it to
// /v1/assess and shows the row: each claim coloured by its posterior, and for a clicked claim
// the passages with the relation and probability the judge gave them. No library, no network
// but this server; every text is inserted as text (never as HTML).
"use strict";

const state = { key: null, contexts: [], row: null, retrieval: "supplied" };
const $ = (id) => document.getElementById(id);

const STOP = new Set(("a an and are as at be by for from has have he her his in is it its of on or " +
  "she that the their they this to was were which who with not no also").split(" "));

function words(text) {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length > 2 && !STOP.has(w));
}

function sentences(text) {
  const out = [];
  const re = /[^.!?]+(?:[.!?]+["')\]]*|$)\s*/g;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m[0].length === 0) { re.lastIndex++; continue; }
    out.push({ start: m.index, end: m.index + m[0].length });
  }
  return out.filter((s) => text.slice(s.start, s.end).trim());
}

function headers() {
  const h = { "Content-Type": "application/json" };
  if (state.key) h.Authorization = "Bearer " + state.key;
  return h;
}

function setStatus(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.className = isError ? "error" : "";
}

async function loadInfo() {
  const response = await fetch("/v1/info", { headers: headers() });
  if (response.status === 401) {
    $("key-label").hidden = false;
    $("server-info").textContent = "This server needs an API key: enter it below.";
    return;
  }
  const info = await response.json();
  state.retrieval = info.retrieval;
  const retriever = info.retrieval === "supplied" ? "no retriever (give the passages)" : "retriever: " + info.retrieval;
  const filtered = info.settings.scores && info.settings.scores.conformal ? " · conformal filter (dropped claims struck through)" : "";
  $("server-info").textContent = `version ${info.version} · judge ${info.judge.split(":")[0]} · engine ${info.engine} · ${retriever}${filtered}`;
  const fr = info.settings.graph && info.settings.graph.version;
  if (fr) $("version").value = String(fr);
}

function buildRecord() {
  const answer = $("answer").value.trim();
  const question = $("question").value.trim();
  const passages = $("passages").value.split(/\n\s*\n/).map((p) => p.trim()).filter(Boolean);
  const record = { input: question, output: answer };
  const mode = $("claims").value;
  if (mode !== "model") {
    const parts = mode === "lines"
      ? answer.split("\n").map((l) => l.trim()).filter(Boolean)
      : sentences(answer).map((s) => answer.slice(s.start, s.end).trim());
    record.atoms = parts.map((text, i) => ({ id: "a" + i, text }));
  }
  state.contexts = passages.map((text, i) => ({ id: "c" + i, text }));
  if (passages.length || state.retrieval === "supplied") record.contexts = state.contexts;
  return record;
}

function colour(p) {
  // red (0) → yellow (0.5) → green (1)
  const hue = Math.round(120 * Math.max(0, Math.min(1, p)));
  return `hsl(${hue}, 70%, 78%)`;
}

function fmt(value) {
  if (value === null || value === undefined) return "–";
  return typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3) : String(value);
}

function showScores(row) {
  const box = $("scores");
  box.replaceChildren();
  const items = [
    ["factual precision", row.factuality_score],
    ["R@K", row.recall_k],
    ["F1@K", row.f1_k],
    ["K", row.k],
    ["supported", `${row.num_true_atoms} of ${row.num_atoms}`],
    ["graph", row.version ? "FR" + row.version : (row.pipeline || "none")],
  ];
  // --conformal: the claims the filter kept, and its guarantee in words below the scores
  if (row.conformal) items.push(["kept by the conformal filter", `${row.conformal.num_kept} of ${row.conformal.num_claims}`]);
  for (const [name, value] of items) {
    const div = document.createElement("div");
    div.className = "score";
    div.dataset.name = name;
    const b = document.createElement("b");
    b.textContent = fmt(value);
    div.append(b, document.createTextNode(name));
    box.append(div);
  }
  if (row.conformal) {
    const statement = document.createElement("p");
    statement.className = "muted conformal";
    statement.textContent = row.conformal.statement + " Dropped claims are marked.";
    box.append(statement);
  }
}

function showAtoms(row) {
  const list = $("atoms");
  list.replaceChildren();
  row.atoms.forEach((atom, index) => {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "atom";
    button.dataset.id = atom.id;
    button.dataset.prediction = atom.prediction;
    button.style.background = colour(atom.probability);
    const verdict = document.createElement("span");
    verdict.className = "verdict";
    verdict.textContent = atom.prediction;
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = atom.text;
    const probability = document.createElement("span");
    probability.className = "probability";
    probability.textContent = "P = " + atom.probability.toFixed(3);
    button.append(verdict, text, probability);
    if ("kept" in atom) {
      // --conformal: whether the filter kept the claim
      button.classList.toggle("dropped", !atom.kept);
      const filtered = document.createElement("span");
      filtered.className = "filtered";
      filtered.textContent = atom.kept ? "kept" : "dropped";
      button.append(filtered);
    }
    button.addEventListener("click", () => showEvidence(index));
    li.append(button);
    list.append(li);
  });
}

function highlighted(text, atomText, relation, deciding) {
  // the sentence the relation screen found deciding (--entailments sentence), else the passage's
  // sentence(s) sharing most words with the claim (the judge scores the window sharing most words
  // with it), marked in the relation's colour, shared words in bold
  const fragment = document.createDocumentFragment();
  const wanted = new Set(words(atomText));
  const at0 = deciding ? text.indexOf(deciding) : -1;
  const spans = at0 >= 0
    ? [{ start: at0, end: at0 + deciding.length }]
    : sentences(text);
  const overlap = at0 >= 0
    ? [1]
    : spans.map((s) => words(text.slice(s.start, s.end)).filter((w) => wanted.has(w)).length);
  const best = Math.max(0, ...overlap);
  let at = 0;
  spans.forEach((s, i) => {
    if (s.start > at) fragment.append(text.slice(at, s.start));
    const piece = text.slice(s.start, s.end);
    if (best > 0 && overlap[i] === best) {
      const mark = document.createElement("mark");
      mark.className = relation || "none";
      for (const token of piece.split(/([\p{L}\p{N}]+)/u)) {
        if (token && wanted.has(token.toLowerCase())) {
          const strong = document.createElement("strong");
          strong.textContent = token;
          mark.append(strong);
        } else if (token) {
          mark.append(token);
        }
      }
      fragment.append(mark);
    } else {
      fragment.append(piece);
    }
    at = s.end;
  });
  if (at < text.length) fragment.append(text.slice(at));
  return fragment;
}

function showEvidence(index) {
  const atom = state.row.atoms[index];
  document.querySelectorAll(".atom").forEach((b, i) => b.classList.toggle("selected", i === index));
  $("evidence").hidden = false;
  $("evidence-title").textContent = `Evidence for “${atom.text}” (${atom.prediction}, P = ${atom.probability.toFixed(3)})`;
  const links = new Map(atom.evidence.map((e) => [e.context, e]));
  // what the judge said but the graph did not use (below the floor, or the relation screen's reason)
  const unused = new Map((atom.unused_evidence || []).map((e) => [e.context, e]));
  const known = new Map(state.contexts.map((c) => [c.id, c]));
  const ids = [
    ...atom.evidence.map((e) => e.context),
    ...(atom.unused_evidence || []).map((e) => e.context).filter((id) => !links.has(id)),
    ...state.contexts.map((c) => c.id).filter((id) => !links.has(id) && !unused.has(id)),
  ];
  const verb = (relation) => (relation === "entailment" ? "supports" : relation === "contradiction" ? "contradicts" : relation);
  const list = $("passages-list");
  list.replaceChildren();
  for (const id of ids) {
    const link = links.get(id);
    const left = link ? null : unused.get(id);
    const li = document.createElement("li");
    li.className = "passage " + (link ? link.relation : left ? "unused" : "none");
    li.dataset.context = id;
    const head = document.createElement("div");
    const relation = document.createElement("span");
    relation.className = "relation";
    relation.textContent = link
      ? `${verb(link.relation)} (p = ${link.probability.toFixed(3)})` +
        (link.judged ? `: the judge read ${link.judged === "entailment" ? "an entailment" : "a contradiction"}, but ${link.screen}`
          : link.screen ? `: ${link.screen}` : "")
      : left
        ? `not used: the judge says it ${left.relation === "entailment" ? "entails" : "contradicts"} (p = ${left.probability.toFixed(3)}), ${left.reason}`
        : "the judge: neutral (no factor)";
    head.append(relation, document.createTextNode(" · passage " + id));
    // a panel of judges: each judge's verdict on this passage, marked where they disagree
    const judged = link || left;
    if (judged && judged.judges) {
      const judges = document.createElement("span");
      judges.className = "judges" + (judged.agreed === false ? " disagree" : "");
      const said = Object.entries(judged.judges).map(([name, v]) =>
        `${name}: ${v.failed ? "failed" : `${v.relation === "entailment" ? "entails" : v.relation === "contradiction" ? "contradicts" : "neutral"} ${v.probability.toFixed(2)}`}`);
      judges.textContent = (judged.agreed === false ? " · judges disagree: " : " · judges agree: ") + said.join(" · ");
      head.append(judges);
    }
    const body = document.createElement("p");
    const context = known.get(id);
    const deciding = (link && link.sentence) || (left && left.sentence) || null;
    if (context) body.append(highlighted(context.text, atom.text, link ? link.relation : left ? "unused" : null, deciding));
    else body.textContent = "(retrieved: its text is not part of the row)";
    li.append(head, body);
    list.append(li);
  }
}

async function check(event) {
  event.preventDefault();
  if (!$("key-label").hidden) state.key = $("api-key").value || null;
  const record = buildRecord();
  if (!record.output) { setStatus("Paste an answer to check.", true); return; }
  if (record.atoms && record.atoms.length === 0) { setStatus("The answer has no claims to check.", true); return; }
  $("check").disabled = true;
  setStatus("Checking…");
  try {
    const response = await fetch("/v1/assess?version=" + encodeURIComponent($("version").value), {
      method: "POST", headers: headers(), body: JSON.stringify(record),
    });
    const body = await response.json();
    if (!response.ok) {
      const e = body.error || {};
      setStatus(`Not scored (${response.status}${e.stage ? ", stage " + e.stage : ""}): ${e.message || response.statusText}`, true);
      if (response.status === 401) $("key-label").hidden = false;
      return;
    }
    state.row = body;
    showScores(body);
    showAtoms(body);
    $("evidence").hidden = true;
    $("result").hidden = false;
    setStatus(`${body.num_atoms} claim(s) checked against ${body.num_contexts} passage(s).`);
  } catch (error) {
    setStatus("The server could not be reached: " + error, true);
  } finally {
    $("check").disabled = false;
  }
}

$("check-form").addEventListener("submit", check);
loadInfo().catch((error) => { $("server-info").textContent = "The server could not be reached: " + error; });
