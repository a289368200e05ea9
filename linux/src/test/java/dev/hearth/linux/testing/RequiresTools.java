package dev.hearth.linux.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/** The test runs these host programs (e.g. {@code mkfs.xfs}). Skips locally, fails in CI. */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@ExtendWith(Requirements.class)
public @interface RequiresTools {
    String[] value();
}
