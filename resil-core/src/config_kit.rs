//! What every primitive's configuration says the same way: setters on its
//! builder and getters on the configuration that store and return a field
//! as it is, and the two settings every pattern has (the events buffer a
//! registry attaches, shadow mode), documented once.

/// Setters of a configuration builder (whose `config` holds the value) that
/// store their argument as it is: `name: Type;` with its documentation, or
/// `@buffer;` and `@shadow;` for the settings every pattern shares.
macro_rules! setters {
    () => {};
    (@buffer; $($rest:tt)*) => {
        /// Size of the recent-events buffer a registry attaches (0: none).
        pub fn event_consumer_buffer_size(mut self, size: u32) -> Self {
            self.config.event_consumer_buffer_size = size;
            self
        }
        $crate::config_kit::setters!($($rest)*);
    };
    (@shadow; $($rest:tt)*) => {
        /// Shadow mode (default `false`): decide as usual, never refuse, and
        /// publish a `ShadowRefusal` event for each call that would have been
        /// refused, to see what a new rule would do before enforcing it.
        pub fn shadow(mut self, shadow: bool) -> Self {
            self.config.shadow = shadow;
            self
        }
        $crate::config_kit::setters!($($rest)*);
    };
    ($(#[$attr:meta])* $name:ident: $ty:ty; $($rest:tt)*) => {
        $(#[$attr])*
        pub fn $name(mut self, $name: $ty) -> Self {
            self.config.$name = $name;
            self
        }
        $crate::config_kit::setters!($($rest)*);
    };
}

/// Getters of a configuration that return a field as it is: `name: Type;`
/// with its documentation, or `@buffer;` and `@shadow;`.
macro_rules! getters {
    () => {};
    (@buffer; $($rest:tt)*) => {
        /// Size of the recent-events buffer that registries attach to each instance.
        pub fn event_consumer_buffer_size(&self) -> u32 {
            self.event_consumer_buffer_size
        }
        $crate::config_kit::getters!($($rest)*);
    };
    (@shadow; $($rest:tt)*) => {
        /// Shadow mode: the instance decides as usual but never refuses; each
        /// would-be refusal is published as a `ShadowRefusal` event instead.
        pub fn shadow(&self) -> bool {
            self.shadow
        }
        $crate::config_kit::getters!($($rest)*);
    };
    ($(#[$attr:meta])* $name:ident: $ty:ty; $($rest:tt)*) => {
        $(#[$attr])*
        pub fn $name(&self) -> $ty {
            self.$name
        }
        $crate::config_kit::getters!($($rest)*);
    };
}

pub(crate) use {getters, setters};
