// cepkit's query editor: CodeMirror 6 as an anywidget module (widgets/editor.py is its Python side).
// scripts/build-editor.sh bundles this file with its npm dependencies into widgets/cepkit-editor.js, which
// the package ships: nothing is fetched at run time.
//
// The model's traits: value (the text, both ways), keywords (the grammar's words), types (the stream's event
// types), attributes (type -> its attributes), diagnostics (the kernel's verdict on a text: errors and
// warnings at line/column/width, applied only while the editor still holds that text), placeholder, rows.
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, placeholder, highlightActiveLine, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { StreamLanguage, HighlightStyle, syntaxHighlighting, bracketMatching } from "@codemirror/language";
import { autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap, startCompletion }
  from "@codemirror/autocomplete";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { tags } from "@lezer/highlight";

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const UNITS = ["ms", "s", "min", "h", "d"];     // the grammar's UNIT, one spelling each (docs/language.md)
const UNIT_WORDS = /^(ms|seconds|second|secs|sec|s|minutes|minute|mins|min|hours|hour|h|days|day|d|events)$/i;

// The language's tokens (cepkit/lang/grammar.lark): comments (# ..., -- ...), strings (a quoted type or a
// value), numbers with their unit, keywords, variables before '.', event types, operators.
function cepkitLanguage(model) {
  return StreamLanguage.define({
    name: "cepkit",
    startState: () => ({ afterNumber: false }),
    token(stream, state) {
      if (stream.eatSpace()) return null;
      const afterNumber = state.afterNumber;
      state.afterNumber = false;
      if (stream.match("#") || stream.match(/^--(?=\s|$)/)) { stream.skipToEnd(); return "comment"; }
      if (stream.match(/^'([^'\\]|\\.)*'?/) || stream.match(/^"([^"\\]|\\.)*"?/)) {
        const next = /^\s*(?:as\s+)?([A-Za-z_][A-Za-z0-9_]*)/i.exec(stream.string.slice(stream.pos));
        const typed = stream.match(/^\+/, false) || (next && !model.get("keywords").includes(next[1].toLowerCase()));
        return typed ? "typeName" : "string";   // "Structure Fire" f is a type, a.name = 'x' AND ... a value
      }
      if (stream.match(/^[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?/) || stream.match(/^\.[0-9]+/)) {
        state.afterNumber = true;
        return "number";
      }
      if (stream.match(/^`[A-Za-z_][A-Za-z0-9_]*`/)) return "typeName";
      const word = stream.match(NAME);
      if (word) {
        const text = word[0];
        if (afterNumber && UNIT_WORDS.test(text)) return "unit";     // 10 min, 5 EVENTS
        if (stream.peek() === ".") return "variableName";
        const keywords = model.get("keywords");
        if (keywords.includes(text.toLowerCase())) return "keyword";
        if (model.get("types").includes(text)) return "typeName";
        return "name";
      }
      if (stream.match(/^(<=|>=|!=|<>|==|=|<|>|\+|-|\*|\/|!|;)/)) return "operator";
      stream.next();
      return null;
    },
    languageData: { commentTokens: { line: "#" } },
  });
}

const colours = HighlightStyle.define([
  { tag: tags.keyword, color: "#8250df", fontWeight: "bold" },
  { tag: tags.typeName, color: "#0550ae" },
  { tag: tags.variableName, color: "#953800" },
  { tag: tags.string, color: "#0a3069" },
  { tag: tags.number, color: "#116329" },
  { tag: tags.unit, color: "#116329", fontStyle: "italic" },
  { tag: tags.comment, color: "#6e7781", fontStyle: "italic" },
  { tag: tags.operator, color: "#cf222e" },
]);

// A type as the language writes it: as is, in double quotes when it is no plain name or is a keyword.
function typeText(type, keywords) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(type) && !keywords.includes(type.toLowerCase())
    ? type : JSON.stringify(type);
}

// The variables the text binds: `Type v`, `Type AS v`, `Type+ v`, `"Quoted type" v` -> {v: type}.
function bindings(text, types) {
  const found = {};
  const atom = /("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[A-Za-z_][A-Za-z0-9_]*`|[A-Za-z_][A-Za-z0-9_]*)\+?\s+(?:as\s+)?([A-Za-z_][A-Za-z0-9_]*)/gi;
  for (const m of text.matchAll(atom)) {
    let type = m[1];
    if (/^["'`]/.test(type)) type = type.slice(1, -1);
    if (types.includes(type) && !(m[2] in found)) found[m[2]] = type;
  }
  return found;
}

function completer(model) {
  return (context) => {
    const keywords = model.get("keywords"), types = model.get("types"), attributes = model.get("attributes");
    const text = context.state.doc.toString();
    const vars = bindings(text, types);
    // v.attr, b[i].attr, b[1].attr, first(b).attr, last(b).attr, prev(b.attr): the attributes of the
    // variable's type (of every type when it is not bound yet)
    const dotted = context.matchBefore(/(?:[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]\n]*\])?|\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\))\.[A-Za-z0-9_]*$/);
    if (dotted) {
      const variable = /[A-Za-z_][A-Za-z0-9_]*/.exec(dotted.text)[0];
      const type = vars[variable];
      const names = type !== undefined ? attributes[type] || []
        : [...new Set(Object.values(attributes).flat())].sort();
      return {
        from: dotted.from + dotted.text.lastIndexOf(".") + 1,
        options: names.map((name) => ({ label: name, type: "property",
                                        detail: type !== undefined ? `of ${type}` : "attribute" })),
        validFor: /^[A-Za-z0-9_]*$/,
      };
    }
    const unit = context.matchBefore(/\b[0-9]+(\.[0-9]*)?\s+[A-Za-z]*$/);
    const typed = unit ? unit.text.match(/[A-Za-z]*$/)[0].toLowerCase() : "";
    if (unit && [...UNITS, "events"].some((u) => u.startsWith(typed))) {
      // after a number: a time unit, or EVENTS after WITHIN (rather than the keywords: "5 m" is no MAX)
      const from = context.pos - typed.length;
      const within = /\bwithin\s+[0-9.]+\s+[A-Za-z]*$/i.test(context.state.sliceDoc(Math.max(0, unit.from - 8), context.pos));
      if (!typed && !context.explicit) return null;
      return { from, options: [...UNITS.map((u) => ({ label: u, type: "unit", detail: "time unit" })),
                               ...(within ? [{ label: "EVENTS", type: "keyword", detail: "a count window" }] : [])],
               validFor: /^[A-Za-z]*$/ };
    }
    const word = context.matchBefore(/["A-Za-z_][A-Za-z0-9_ -]*$/);
    const plain = context.matchBefore(/[A-Za-z_][A-Za-z0-9_]*$/);
    const quoted = word && word.text.startsWith('"') ? word : null;
    const at = quoted || plain;
    if (!at && !context.explicit) return null;
    const from = at ? at.from : context.pos;
    const options = [
      ...types.map((type) => ({ label: typeText(type, keywords), type: "type", detail: "event type", boost: 2 })),
      ...Object.keys(vars).map((v) => ({ label: v, type: "variable", detail: vars[v], boost: 1 })),
      ...(quoted ? [] : keywords.filter((k) => k.length > 1).map((k) => ({ label: k.toUpperCase(), type: "keyword" }))),
    ];
    return { from, options, validFor: quoted ? /^"[^"]*"?$/ : /^[A-Za-z0-9_]*$/ };
  };
}

// The kernel's diagnostics as CodeMirror's: 1-based line and column (in characters) and a width.
function diagnosticsOf(doc, found) {
  return found.map((d) => {
    const line = doc.line(Math.min(Math.max(d.line, 1), doc.lines));
    let from = Math.min(line.from + Math.max(d.column - 1, 0), line.to);
    let to = Math.min(from + Math.max(d.width || 1, 1), line.to);
    if (to <= from && from > line.from) from -= 1;     // at the end of a line: the character before
    to = Math.max(to, Math.min(from + 1, doc.length));
    return { from, to, severity: d.severity || "error", message: d.message };
  });
}

function render({ model, el }) {
  el.classList.add("cepkit-editor");
  let pushing = null;
  const view = new EditorView({
    parent: el,
    state: EditorState.create({
      doc: model.get("value"),
      extensions: [
        lineNumbers(), history(), drawSelection(), highlightActiveLine(), bracketMatching(), closeBrackets(),
        cepkitLanguage(model), syntaxHighlighting(colours), lintGutter(),
        autocompletion({ override: [completer(model)], icons: false }),
        placeholder(model.get("placeholder")),
        keymap.of([...closeBracketsKeymap, ...completionKeymap, ...historyKeymap, indentWithTab, ...defaultKeymap]),
        EditorView.lineWrapping,
        EditorView.theme({
          "&": { border: "1px solid #d0d7de", borderRadius: "3px", fontSize: "13px", background: "white" },
          "&.cm-focused": { outline: "1px solid #0969da" },
          ".cm-scroller": { fontFamily: "var(--jp-code-font-family, monospace)",
                            minHeight: `${model.get("rows") * 1.45 + 0.6}em` },
          ".cm-content": { minHeight: `${model.get("rows") * 1.45}em` },
        }),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged) return;
          clearTimeout(pushing);        // each keystroke checked in the kernel, at most every 120 ms
          pushing = setTimeout(() => { model.set("value", view.state.doc.toString()); model.save_changes(); }, 120);
        }),
      ],
    }),
  });
  const showDiagnostics = () => {
    const { text, items } = model.get("diagnostics");
    if (text !== view.state.doc.toString()) return;     // a verdict on an older text: the next one follows
    view.dispatch(setDiagnostics(view.state, diagnosticsOf(view.state.doc, items || [])));
  };
  const onValue = () => {
    const value = model.get("value");
    if (value !== view.state.doc.toString()) {
      clearTimeout(pushing);
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: value } });
    }
    showDiagnostics();
  };
  model.on("change:value", onValue);
  model.on("change:diagnostics", showDiagnostics);
  model.on("msg:custom", (msg) => {
    if (msg && msg.event === "complete") { view.focus(); startCompletion(view); }
    if (msg && msg.event === "copy") {      // "copy as code": the page's clipboard, the kernel told how it went
      const told = (ok) => model.send({ event: "copied", ok });
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(msg.text).then(() => told(true), () => told(false));
      else told(false);
    }
  });
  showDiagnostics();
  el.cepkitEditor = view;           // the browser tests read and type through it
  return () => { clearTimeout(pushing); view.destroy(); };
}

export default { render };
