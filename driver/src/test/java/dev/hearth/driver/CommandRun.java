package dev.hearth.driver;

import java.io.PrintWriter;
import java.io.StringWriter;

/** One in-process run of the hearth command line ({@link Main#commandLine}): its exit status and what it printed. */
record CommandRun(int exit, String out, String err) {

    static CommandRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.commandLine(args).setOut(new PrintWriter(out)).setErr(new PrintWriter(err)).execute(args);
        return new CommandRun(exit, out.toString(), err.toString());
    }
}
