package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ConnectionLimitTest {

    @Test
    void admitsUpToTheLimitThenOnlyAsConnectionsClose() {
        ConnectionLimit limit = new ConnectionLimit(2, "test", ConnectionLimit.SILENCE);
        AtomicBoolean first = new AtomicBoolean(true);
        AtomicBoolean second = new AtomicBoolean(true);

        assertThat(limit.admit(first::get)).isTrue();
        assertThat(limit.admit(second::get)).isTrue();
        assertThat(limit.admit(() -> true)).as("a third while two are open").isFalse();

        first.set(false);
        assertThat(limit.admit(() -> true)).as("a third once one has closed").isTrue();
        assertThat(limit.counted()).isEqualTo(2);
        assertThat(limit.admit(() -> true)).isFalse();
    }

    @Test
    void refusingClosesTheConnection() {
        ConnectionLimit limit = new ConnectionLimit(1, "test", ConnectionLimit.SILENCE);
        AtomicBoolean closed = new AtomicBoolean();

        limit.refuse(() -> closed.set(true));
        limit.refuse(() -> closed.set(true)); // a second within the quiet period logs nothing, and still closes

        assertThat(closed).isTrue();
    }

    @Test
    void aLimitBelowOneIsRefused() {
        assertThatThrownBy(() -> new ConnectionLimit(0, "test", ConnectionLimit.SILENCE)).isInstanceOf(IllegalArgumentException.class);
    }
}
