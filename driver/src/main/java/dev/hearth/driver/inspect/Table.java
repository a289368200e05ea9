package dev.hearth.driver.inspect;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Rows under a header, each column as wide as its widest cell, two spaces apart; an empty cell shows as '-'. */
final class Table {

    private final List<String[]> rows = new ArrayList<>();
    private final int columns;

    Table(String... header) {
        columns = header.length;
        rows.add(header);
    }

    Table row(String... cells) {
        if (cells.length != columns) {
            throw new IllegalArgumentException(cells.length + " cells for " + columns + " columns");
        }
        rows.add(Arrays.stream(cells).map(c -> c == null || c.isEmpty() ? "-" : c).toArray(String[]::new));
        return this;
    }

    boolean isEmpty() {
        return rows.size() == 1;
    }

    /** The lines, each ending in a newline; the last column is not padded. */
    String render() {
        int[] widths = new int[columns];
        for (String[] row : rows) {
            for (int i = 0; i < columns; i++) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        StringBuilder out = new StringBuilder();
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < columns; i++) {
                line.append(row[i]);
                if (i + 1 < columns) {
                    line.append(" ".repeat(widths[i] - row[i].length() + 2));
                }
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
        return out.toString();
    }
}
