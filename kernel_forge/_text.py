"""Plain-text tables for the CLI and the warm-up report."""


def fmt_table(rows, headers, aligns):
    widths = [len(h) for h in headers]
    for r in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    def line(cells):
        return "  ".join(c.rjust(w) if a == ">" else c.ljust(w)
                         for c, w, a in zip(cells, widths, aligns)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


def shorten(s, n):
    return s if len(s) <= n else s[: n - 3] + "..."
