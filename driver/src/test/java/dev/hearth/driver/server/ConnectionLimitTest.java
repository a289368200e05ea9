package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ConnectionLimitTest {

    @Test
    void admitsUpToTheLimitThenOnlyAsConnectionsClose() {
        ConnectionLimit limit = new ConnectionLimit(2, "test", ConnectionLimit.SILENCE);
        AtomicBoolean first = new AtomicBoolean(true);
        AtomicBoolean second = new AtomicBoolean(true);

        assertThat(limit.admit(first::get, () -> true, () -> {})).isTrue();
        assertThat(limit.admit(second::get, () -> true, () -> {})).isTrue();
        assertThat(limit.admit(() -> true, () -> true, () -> {})).as("a third while two are open").isFalse();

        first.set(false);
        assertThat(limit.admit(() -> true, () -> true, () -> {})).as("a third once one has closed").isTrue();
        assertThat(limit.counted()).isEqualTo(2);
        assertThat(limit.admit(() -> true, () -> true, () -> {})).isFalse();
    }

    @Test
    void aFullCountGivesThePlaceOfTheOldestConnectionThatSaidNothingToANewOne() {
        ConnectionLimit limit = new ConnectionLimit(3, "test", Duration.ZERO); // places given at once
        AtomicBoolean firstClosed = new AtomicBoolean();
        AtomicBoolean secondClosed = new AtomicBoolean();
        AtomicBoolean thirdClosed = new AtomicBoolean();
        AtomicBoolean secondSpoke = new AtomicBoolean();
        assertThat(limit.admit(() -> !firstClosed.get(), () -> false, () -> firstClosed.set(true))).isTrue();
        assertThat(limit.admit(() -> !secondClosed.get(), secondSpoke::get, () -> secondClosed.set(true))).isTrue();
        assertThat(limit.admit(() -> !thirdClosed.get(), () -> true, () -> thirdClosed.set(true))).isTrue();
        secondSpoke.set(true);

        assertThat(limit.admit(() -> true, () -> false, () -> {})).as("a fourth, in the first's place").isTrue();
        assertThat(firstClosed).as("the first, silent, closed to make room").isTrue();
        assertThat(secondClosed).isFalse();
        assertThat(thirdClosed).isFalse();
        assertThat(limit.counted()).isEqualTo(3);
        assertThat(limit.admit(() -> true, () -> true, () -> {})).as("a fifth, in the silent fourth's place").isTrue();
        assertThat(limit.admit(() -> true, () -> true, () -> {})).as("a sixth: all three have spoken").isFalse();
        assertThat(secondClosed).isFalse();
        assertThat(thirdClosed).isFalse();
    }

    @Test
    void aConnectionSilentForLessThanATenthOfTheSilenceAllowedKeepsItsPlace() {
        ConnectionLimit limit = new ConnectionLimit(1, "test", ConnectionLimit.SILENCE);
        AtomicBoolean closed = new AtomicBoolean();
        assertThat(limit.admit(() -> !closed.get(), () -> false, () -> closed.set(true))).isTrue();

        assertThat(limit.admit(() -> true, () -> false, () -> {})).isFalse();
        assertThat(closed).isFalse();
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
