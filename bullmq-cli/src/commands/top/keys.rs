//! The keyboard, read on a thread of its own (crossterm reads block) and handed to the
//! screen's loop as actions.

use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc::UnboundedSender;

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Up,
    Down,
    TogglePause,
    OpenFailed,
    Close,
    Refresh,
    Quit,
    /// The terminal changed size: draw again.
    Redraw,
}

/// The action of a key, if it has one.
fn action(code: KeyCode, modifiers: KeyModifiers) -> Option<Action> {
    Some(match code {
        KeyCode::Up | KeyCode::Char('k') => Action::Up,
        KeyCode::Down | KeyCode::Char('j') => Action::Down,
        KeyCode::Char('p' | ' ') => Action::TogglePause,
        KeyCode::Char('f') => Action::OpenFailed,
        KeyCode::Esc => Action::Close,
        KeyCode::Char('r') => Action::Refresh,
        KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => Action::Quit,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    })
}

/// Reads keys until the screen's loop is gone (its receiver dropped) or reading fails.
pub(super) fn read(actions: &UnboundedSender<Action>) {
    while !actions.is_closed() {
        match event::poll(Duration::from_millis(100)) {
            Ok(false) => {}
            Ok(true) => {
                let next = match event::read() {
                    Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                        action(key.code, key.modifiers)
                    }
                    Ok(Event::Resize(..)) => Some(Action::Redraw),
                    Ok(_) => None,
                    // The terminal is gone: nothing more to read.
                    Err(_) => Some(Action::Quit),
                };
                if let Some(next) = next
                    && actions.send(next).is_err()
                {
                    return;
                }
            }
            Err(_) => {
                let _ = actions.send(Action::Quit);
                return;
            }
        }
    }
}
