package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** What a CSI client sees when a call fails: the status code, and a message naming what was wrong. */
final class CsiAssertions {

    private CsiAssertions() {}

    /** Asserts the call fails with {@code code} and a description containing each of {@code mentions}. */
    static Status assertFails(ThrowingCallable call, Status.Code code, String... mentions) {
        Throwable thrown = catchThrowable(call);
        assertThat(thrown).as("the call should have failed with %s", code)
                .isInstanceOf(StatusRuntimeException.class);
        Status status = ((StatusRuntimeException) thrown).getStatus();
        assertThat(status.getCode()).as("status of %s", status).isEqualTo(code);
        for (String mention : mentions) {
            assertThat(status.getDescription()).as("description of %s", status).contains(mention);
        }
        return status;
    }
}
