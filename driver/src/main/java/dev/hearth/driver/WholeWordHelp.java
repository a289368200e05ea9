package dev.hearth.driver;

import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Help;
import picocli.CommandLine.Help.Ansi.Text;
import picocli.CommandLine.Help.Column;
import picocli.CommandLine.Help.ColorScheme;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;

/**
 * picocli's help, except that an option's description wraps only at spaces. picocli wraps with
 * the JDK's line BreakIterator, which also breaks after '.', ',', '/' and '-': it printed
 * {@code topology.} at the end of one line and {@code hearth.dev/node} on the next, and a name
 * split like that cannot be copied. Those characters, inside a word, stand in for themselves as
 * private-use code points while picocli wraps, and are put back when the table is printed.
 */
final class WholeWordHelp extends Help {

    static final CommandLine.IHelpFactory FACTORY = WholeWordHelp::new;

    /** Where the JDK's line breaker would split a word; each maps to {@link #STAND_IN} + its index. */
    private static final String BREAKERS = ".,/-:;=()?!";
    private static final char STAND_IN = '\uE000';

    private WholeWordHelp(CommandSpec spec, ColorScheme scheme) {
        super(spec, scheme);
    }

    @Override
    public Layout createDefaultLayout(List<OptionSpec> options, List<PositionalParamSpec> positionals,
            ColorScheme scheme) {
        TextTable picocli = TextTable.forDefaultColumns(scheme, calcLongOptionColumnWidth(options, positionals, scheme),
                commandSpec().usageMessage().width());
        WholeWordTable table = new WholeWordTable(scheme, picocli.columns());
        table.indentWrappedLines = picocli.indentWrappedLines;
        table.setAdjustLineBreaksForWideCJKCharacters(picocli.isAdjustLineBreaksForWideCJKCharacters());
        return new Layout(scheme, table, createDefaultOptionRenderer(), createDefaultParameterRenderer());
    }

    /** Inside a word (a breaker followed by anything but a space), each breaker becomes its stand-in. */
    static String protect(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            int breaker = BREAKERS.indexOf(c);
            boolean insideWord = i + 1 < text.length() && !Character.isWhitespace(text.charAt(i + 1));
            out.append(breaker >= 0 && insideWord ? (char) (STAND_IN + breaker) : c);
        }
        return out.toString();
    }

    static String restore(CharSequence text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            int breaker = c - STAND_IN;
            out.append(breaker >= 0 && breaker < BREAKERS.length() ? BREAKERS.charAt(breaker) : c);
        }
        return out.toString();
    }

    private static final class WholeWordTable extends TextTable {

        private final ColorScheme scheme;

        WholeWordTable(ColorScheme scheme, Column[] columns) {
            super(scheme, columns);
            this.scheme = scheme;
        }

        @Override
        public Cell putValue(int row, int col, Text value) {
            if (value == null || columns()[col].overflow != Column.Overflow.WRAP) {
                return super.putValue(row, col, value);
            }
            return super.putValue(row, col, scheme.ansi().new Text(protect(value.plainString()), scheme));
        }

        @Override
        public StringBuilder toString(StringBuilder text) {
            StringBuilder table = super.toString(new StringBuilder());
            return text.append(restore(table));
        }
    }
}
