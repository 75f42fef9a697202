/**
 * The WAF model: write traces of any device, an FDP SSD model that replays them, and a device that
 * acts as an FDP namespace. Its figures are comparisons inside the model, not device predictions
 * (docs/waf-model.md).
 */
package io.fdpblock.sim;
